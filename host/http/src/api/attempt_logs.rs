//! `GET /v1/jobs/{id}/attempts/{n}/logs`: what one attempt of a job logged, for the job's
//! tenant. Another tenant's job is a 404 like a missing one (the store's reads are
//! scoped by `caller.tenant`); an attempt that ran but logged nothing answers 200 with
//! an empty `log`.
//!
//! Must not: touch SQL, or show a log without the tenant scope.

use axum::Json;
use axum::extract::State;

use super::auth::Caller;
use super::error::{ApiError, ApiPath, ErrorBody};
use super::state::AppState;
use sluice_wire::AttemptLogView;

/// What one attempt of a job logged.
#[utoipa::path(
    get, path = "/v1/jobs/{id}/attempts/{n}/logs", tag = "jobs",
    params(
        ("id" = i64, Path, description = "Job id"),
        ("n" = i32, Path, description = "Attempt number, from 1"),
    ),
    responses(
        (status = 200, body = AttemptLogView),
        (status = 400, description = "An id or attempt number that is not an integer", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, description = "No such job for this tenant, or no such attempt", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn get_attempt_log(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((id, n)): ApiPath<(i64, i32)>,
) -> Result<Json<AttemptLogView>, ApiError> {
    let store = state.store();
    let mut attempts = store
        .attempt_logs(Some(&caller.tenant), id, Some(n))
        .await?;
    match attempts.pop() {
        Some(newest) => Ok(Json(AttemptLogView::new(id, &newest))),
        None if store.get(Some(&caller.tenant), id).await?.is_some() => {
            Err(ApiError::not_found(format!("job {id} has no attempt {n}")))
        }
        None => Err(ApiError::not_found(format!("job {id} not found"))),
    }
}
