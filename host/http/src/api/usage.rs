//! `GET /v1/usage`: what the caller's tenant's runs used (the same report as `sluice
//! usage`, docs/usage.md); an admin token may ask for every tenant (`all_tenants=true`).
//! Must not: show another tenant's usage to a tenant's token (the store scopes by tenant).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use sluice_wire::usage::parse_grouping;
use sluice_wire::{UsageView, UsageWindow};
use utoipa::IntoParams;

use super::auth::Caller;
use super::error::{ApiError, ApiQuery, ErrorBody};
use super::state::AppState;

/// The query of `GET /v1/usage`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct UsageParams {
    /// From when (RFC 3339; default 24 hours ago); its hour counts whole. At most 366
    /// days back: an earlier one starts there.
    #[param(example = "2026-12-01T00:00:00Z")]
    pub since: Option<DateTime<Utc>>,
    /// Until when, exclusive (RFC 3339; default now; not after `since`: no rows).
    pub until: Option<DateTime<Utc>>,
    /// One row per tenant (default), or per tenant and `type`, or per tenant and `hour`.
    #[param(pattern = "^(tenant|type|hour)$")]
    pub by: Option<String>,
    /// Every tenant's usage (an admin token only).
    pub all_tenants: Option<bool>,
}

/// Metered usage of the caller's tenant (runs, fuel, wall time, peak memory, outbound
/// requests and bytes, payload, output and log bytes), per tenant and as asked.
#[utoipa::path(
    get, path = "/v1/usage", tag = "meta",
    params(UsageParams),
    responses(
        (status = 200, description = "The report (the JSON of `sluice usage --json`)", body = UsageView),
        (status = 400, description = "A malformed window or grouping", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, description = "`all_tenants` without an admin token", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn usage(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(params): ApiQuery<UsageParams>,
) -> Result<Json<UsageView>, ApiError> {
    let by = parse_grouping(params.by.as_deref()).map_err(ApiError::bad_request)?;
    let window = UsageWindow::new(params.since, params.until, by, Utc::now());
    let all = params.all_tenants.unwrap_or(false);
    if all && !caller.admin {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "only an admin token can read every tenant's usage (all_tenants)",
        ));
    }
    let tenant = (!all).then_some(caller.tenant.as_str());
    let rows = state
        .store()
        .usage(tenant, window.since, window.until, window.by)
        .await?;
    Ok(Json(UsageView::new(&window, rows)))
}
