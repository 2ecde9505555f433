//! Flow-control endpoints (docs/flow-control.md): pause and resume a job type, change its
//! caps and rate limits (`PATCH /v1/job-types/{type}/flow`), and pause or resume a
//! tenant (admin tokens only: tenants are the operator's).
//!
//! Must not: change another tenant's job types, or enforce anything (the claim does).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Deserializer};
use sluice_store::{FlowChange, Rate};
use utoipa::ToSchema;

use super::auth::Caller;
use super::error::{ApiError, ApiJson, ApiPath, ErrorBody};
use super::state::AppState;
use super::validate;
use sluice_wire::{JobTypeView, TenantView};

/// A field that may be absent (keep), null (clear) or set.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// A whole number (`3.0` is 3, as JSON Schema counts) that may be absent (keep) or null
/// (clear).
fn present_whole<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<u32>>, D::Error> {
    super::whole::option(d).map(Some)
}

/// A change of a job type's flow controls: absent fields are kept, null clears one.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowRequest {
    /// Most of the type's jobs running at once, fleet-wide (null: no cap).
    #[serde(default, deserialize_with = "present_whole")]
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 2147483647)]
    pub max_running: Option<Option<u32>>,
    /// Most jobs with the same concurrency key running at once, fleet-wide.
    #[serde(default, deserialize_with = "present_whole")]
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 2147483647)]
    pub max_running_per_key: Option<Option<u32>>,
    /// A token bucket `N/PERIOD`: N jobs (1 to 999999999) per PERIOD (1 to 999 of `ms`,
    /// `s`, `m`, `h` or `d`; no number means 1), bursting to N.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, example = "100/1m", pattern = r"^[1-9][0-9]{0,8}/([1-9][0-9]{0,2})?(ms|s|m|h|d)$")]
    pub rate: Option<Option<String>>,
    /// The same for each concurrency key.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, example = "10/1s", pattern = r"^[1-9][0-9]{0,8}/([1-9][0-9]{0,2})?(ms|s|m|h|d)$")]
    pub rate_per_key: Option<Option<String>>,
    /// Times one job may snooze before a snooze fails its attempt (null: the host's
    /// default, 25; 0: a job may not snooze).
    #[serde(default, deserialize_with = "present_whole")]
    #[schema(value_type = Option<u32>, minimum = 0, maximum = 2147483647)]
    pub max_snoozes: Option<Option<u32>>,
}

fn rate(field: &str, value: Option<Option<String>>) -> Result<Option<Option<Rate>>, ApiError> {
    value
        .map(|v| {
            v.map(|text| {
                Rate::parse(&text).map_err(|e| ApiError::bad_request(format!("{field}: {e}")))
            })
            .transpose()
        })
        .transpose()
}

async fn change_type(
    state: &AppState,
    caller: &Caller,
    name: &str,
    change: FlowChange,
) -> Result<Json<JobTypeView>, ApiError> {
    validate::text("type", name)?;
    state
        .store()
        .set_flow(&caller.tenant, name, &change)
        .await?;
    state
        .store()
        .get_job_type(&caller.tenant, name)
        .await?
        .map(|t| Json(t.into()))
        .ok_or_else(|| ApiError::not_found(format!("job type {name:?} not found")))
}

/// Change a job type's concurrency caps and rate limits.
#[utoipa::path(
    patch, path = "/v1/job-types/{type}/flow", tag = "job-types",
    params(("type" = String, Path, description = "Job type name")),
    request_body = FlowRequest,
    responses(
        (status = 200, description = "The job type with its new flow controls", body = JobTypeView),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, description = "No such job type for this tenant", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn patch_flow(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
    ApiJson(body): ApiJson<serde_json::Value>,
) -> Result<Json<JobTypeView>, ApiError> {
    // An object only: serde would read a struct from an array too.
    if !body.is_object() {
        return Err(ApiError::bad_request("the body must be a JSON object"));
    }
    let request: FlowRequest = serde_json::from_value(body)
        .map_err(|e| ApiError::bad_request(format!("invalid body: {e}")))?;
    let change = FlowChange {
        paused: None,
        max_running: request.max_running,
        max_running_per_key: request.max_running_per_key,
        rate: rate("rate", request.rate)?,
        rate_per_key: rate("rate_per_key", request.rate_per_key)?,
        max_snoozes: request.max_snoozes,
    };
    change_type(&state, &caller, &name, change).await
}

/// Pause a job type: none of its jobs is claimed until resumed; running ones finish.
#[utoipa::path(
    post, path = "/v1/job-types/{type}/pause", tag = "job-types",
    params(("type" = String, Path, description = "Job type name")),
    responses((status = 200, description = "The paused job type", body = JobTypeView), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn pause_type(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<JobTypeView>, ApiError> {
    let change = FlowChange {
        paused: Some(true),
        ..Default::default()
    };
    change_type(&state, &caller, &name, change).await
}

/// Resume a paused job type.
#[utoipa::path(
    post, path = "/v1/job-types/{type}/resume", tag = "job-types",
    params(("type" = String, Path, description = "Job type name")),
    responses((status = 200, description = "The resumed job type", body = JobTypeView), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn resume_type(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<JobTypeView>, ApiError> {
    let change = FlowChange {
        paused: Some(false),
        ..Default::default()
    };
    change_type(&state, &caller, &name, change).await
}

async fn set_tenant(
    state: &AppState,
    caller: &Caller,
    id: &str,
    paused: bool,
) -> Result<Json<TenantView>, ApiError> {
    if !caller.admin {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "pausing a tenant takes an admin token",
        ));
    }
    state.store().set_tenant_paused(id, paused).await?;
    let tenant = state.store().get_tenant(id).await?;
    tenant
        .map(|t| Json(t.into()))
        .ok_or_else(|| ApiError::not_found(format!("tenant {id:?} not found")))
}

/// Pause a tenant (admin tokens): none of its jobs is claimed; running ones finish.
#[utoipa::path(
    post, path = "/v1/tenants/{id}/pause", tag = "meta",
    params(("id" = String, Path, description = "Tenant id")),
    responses((status = 200, description = "The paused tenant", body = TenantView), (status = 401, body = ErrorBody), (status = 403, description = "Not an admin token", body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn pause_tenant(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<TenantView>, ApiError> {
    set_tenant(&state, &caller, &id, true).await
}

/// Resume a paused tenant (admin tokens).
#[utoipa::path(
    post, path = "/v1/tenants/{id}/resume", tag = "meta",
    params(("id" = String, Path, description = "Tenant id")),
    responses((status = 200, description = "The resumed tenant", body = TenantView), (status = 401, body = ErrorBody), (status = 403, description = "Not an admin token", body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn resume_tenant(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<TenantView>, ApiError> {
    set_tenant(&state, &caller, &id, false).await
}
