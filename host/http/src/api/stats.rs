//! `GET /v1/stats`: the caller's tenant's queue statistics (the same query as
//! `sluice stats`). Must not: show another tenant's rows (the store scopes by tenant).

use axum::Json;
use axum::extract::State;

use super::auth::Caller;
use super::error::{ApiError, ErrorBody};
use super::state::AppState;
use sluice_wire::StatsView;

/// Queue depth per state and job type, oldest ready job, lease expirations in the last
/// hour — for the caller's tenant only.
#[utoipa::path(
    get, path = "/v1/stats", tag = "meta",
    responses(
        (status = 200, description = "Statistics of the caller's tenant (the JSON of `sluice stats --json`)", body = StatsView),
        (status = 401, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn stats(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<StatsView>, ApiError> {
    let stats = state.store().stats(Some(&caller.tenant)).await?;
    Ok(Json(stats.into()))
}
