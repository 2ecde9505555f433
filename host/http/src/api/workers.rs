//! `GET /v1/workers`: the worker registry (the same rows as `sluice workers list`), for
//! admin tokens only: it shows every host of the fleet, not one tenant's data.
//! Must not: filter or compute states itself (the store reads them against the
//! database clock).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;

use super::auth::Caller;
use super::error::{ApiError, ErrorBody};
use super::state::AppState;
use sluice_wire::WorkerView;

/// Every registered `sluice worker` and `sluice scheduler`: running first, then lost (no
/// heartbeat for longer than its lease), then stopped; newest start first within each.
/// Admin tokens only.
#[utoipa::path(
    get, path = "/v1/workers", tag = "meta",
    responses(
        (status = 200, description = "The worker registry (the JSON of `sluice workers list --json`)", body = Vec<WorkerView>),
        (status = 401, body = ErrorBody),
        (status = 403, description = "The token is not an admin token (the registry covers the whole fleet), or `X-Sluice-Tenant` names another tenant", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn list_workers(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Vec<WorkerView>>, ApiError> {
    if !caller.admin {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "GET /v1/workers needs an admin token: the worker registry covers the whole fleet",
        ));
    }
    let workers = state.store().list_workers().await?;
    Ok(Json(workers.into_iter().map(Into::into).collect()))
}
