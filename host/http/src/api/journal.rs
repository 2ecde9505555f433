//! `GET /v1/jobs/{id}/journal`: a durable job's journal of host calls, for the job's
//! tenant (`docs/durable.md`). Another tenant's job is a 404 like a missing one (the
//! store's reads are scoped by `caller.tenant`); a job that journaled nothing (not
//! durable, or not run yet) answers 200 with no entries.
//!
//! Must not: touch SQL, or show a journal without the tenant scope.

use axum::Json;
use axum::extract::State;

use super::auth::Caller;
use super::error::{ApiError, ApiPath, ErrorBody};
use super::state::AppState;
use sluice_wire::JournalView;

/// A durable job's journal: each host call its guest observed, in order.
#[utoipa::path(
    get, path = "/v1/jobs/{id}/journal", tag = "jobs",
    params(("id" = i64, Path, description = "Job id")),
    responses(
        (status = 200, body = JournalView),
        (status = 400, description = "An id that is not an integer", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, description = "No such job for this tenant", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn get_journal(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<JournalView>, ApiError> {
    let store = state.store();
    let records = store.journal(Some(&caller.tenant), id).await?;
    if records.is_empty() && store.get(Some(&caller.tenant), id).await?.is_none() {
        return Err(ApiError::not_found(format!("job {id} not found")));
    }
    Ok(Json(JournalView::new(id, records)))
}
