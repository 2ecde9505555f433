//! `GET /v1/tenants/{id}`: a tenant with its caps and egress bound (the JSON of `sluice
//! tenants show ID --json`). A token reads its own tenant; an admin token any tenant.
//! Another tenant is a 404 for everyone else, like a missing one.
//!
//! Must not: change a tenant (caps and bounds are the operator's, on the CLI).

use axum::Json;
use axum::extract::State;

use super::auth::Caller;
use super::error::{ApiError, ApiPath, ErrorBody};
use super::state::AppState;
use sluice_wire::TenantView;

/// A tenant and its caps (null: the host default).
#[utoipa::path(
    get, path = "/v1/tenants/{id}", tag = "meta",
    params(("id" = String, Path, description = "Tenant id: the caller's own, or any with an admin token")),
    responses(
        (status = 200, description = "The tenant (the JSON of `sluice tenants show ID --json`)", body = TenantView),
        (status = 401, body = ErrorBody),
        (status = 404, description = "No such tenant, or another tenant than the token's", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn get_tenant(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<TenantView>, ApiError> {
    let missing = || ApiError::not_found(format!("tenant {id:?} not found"));
    if id != caller.tenant && !caller.admin {
        return Err(missing());
    }
    let tenant = state.store().get_tenant(&id).await?.ok_or_else(missing)?;
    Ok(Json(tenant.into()))
}
