//! Component endpoints: upload (raw bytes, validated by the sandbox exactly like
//! `sluice component push`), list and show one. The body limit is the tenant's
//! `max_component_bytes` (or the server default): a larger body is refused with 413
//! before it is read in full.
//!
//! Must not: store anything the sandbox has not validated.

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use sluice_sandbox::ValidationError;
use sluice_store::NewComponent;
use utoipa::IntoParams;

use super::auth::Caller;
use super::error::{ApiError, ApiPath, ApiQuery, ErrorBody};
use super::state::AppState;
use super::validate;
use sluice_wire::schemas;
use sluice_wire::{ComponentDetail, ComponentView};

/// Options of an upload.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct UploadParams {
    /// Version label, 1 to 64 characters (default: the next integer; identical bytes
    /// return the stored one).
    #[param(min_length = 1, max_length = 64)]
    pub version: Option<String>,
}

/// Upload a component (the raw `.wasm` bytes as the body).
#[utoipa::path(
    put, path = "/v1/components/{name}", tag = "components",
    params(("name" = String, Path, description = "Component name, 1 to 128 characters", min_length = 1, max_length = 128), UploadParams),
    request_body(
        description = "The component's `.wasm` bytes (the Content-Type is not checked)",
        content(
            (inline(schemas::WasmBytes) = "application/wasm"),
            (inline(schemas::WasmBytes) = "application/octet-stream"),
        ),
    ),
    responses(
        (status = 200, description = "Stored (or identical bytes were already stored under this name)", body = ComponentView),
        (status = 400, description = "Not a valid Sluice task component (the message says why)", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 409, description = "This version already holds other bytes (versions are immutable)", body = ErrorBody),
        (status = 413, description = "Over the tenant's component size limit", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn put_component(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
    ApiQuery(params): ApiQuery<UploadParams>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<ComponentView>, ApiError> {
    validate::text("name", &name)?;
    validate::text_opt("version", params.version.as_deref())?;
    let limit = caller
        .limits
        .component_limit(state.config().default_max_component_bytes);
    let too_large = |size: &dyn std::fmt::Display| {
        ApiError::too_large(format!(
            "component is {size} bytes, over tenant {:?}'s limit of {limit} bytes",
            caller.tenant
        ))
    };
    // Before a byte of the body is read: a declared length over the limit is refused.
    super::body_limit::check_declared(
        &headers,
        limit,
        &format!("tenant {:?}'s component limit", caller.tenant),
    )?;
    let bytes = axum::body::to_bytes(body, usize::try_from(limit).unwrap_or(usize::MAX))
        .await
        .map_err(|e| {
            if super::body_timeout::is_timeout(&e) {
                ApiError::body_timed_out(e)
            } else {
                too_large(&"more than the limit")
            }
        })?;
    let sandbox = state.sandbox().clone();
    let checked = bytes.clone();
    let validated = tokio::task::spawn_blocking(move || {
        sandbox.validate(&checked, usize::try_from(limit).unwrap_or(usize::MAX))
    })
    .await
    .map_err(ApiError::internal)?;
    let contract = match validated {
        Ok(info) => info.contract.minor(),
        Err(ValidationError::TooLarge { size, .. }) => return Err(too_large(&size)),
        Err(e) => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_component",
                format!("not a valid Sluice task component: {e}"),
            ));
        }
    };
    let record = state
        .store()
        .put_component(&NewComponent {
            tenant: caller.tenant.clone(),
            name,
            version: params.version,
            bytes: bytes.to_vec(),
            contract,
        })
        .await?;
    Ok(Json(record.into()))
}

/// The tenant's components.
#[utoipa::path(
    get, path = "/v1/components", tag = "components",
    responses((status = 200, body = Vec<ComponentView>), (status = 401, body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn list_components(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Vec<ComponentView>>, ApiError> {
    let components = state.store().list_components(Some(&caller.tenant)).await?;
    Ok(Json(components.into_iter().map(Into::into).collect()))
}

/// Which version `GET /v1/components/{name}` shows.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ShowParams {
    /// The version label (default: the latest version).
    #[param(min_length = 1, max_length = 64)]
    pub version: Option<String>,
}

/// One component of the tenant (the latest version, or `?version=`), with the job types
/// that run it.
#[utoipa::path(
    get, path = "/v1/components/{name}", tag = "components",
    params(("name" = String, Path, description = "Component name"), ShowParams),
    responses(
        (status = 200, description = "The component (the JSON of `sluice component show NAME[@VERSION] --json`)", body = ComponentDetail),
        (status = 401, body = ErrorBody),
        (status = 404, description = "No such component (or version) for this tenant", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn get_component(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
    ApiQuery(params): ApiQuery<ShowParams>,
) -> Result<Json<ComponentDetail>, ApiError> {
    let store = state.store();
    let record = store
        .find_component(&caller.tenant, &name, params.version.as_deref())
        .await?
        .ok_or_else(|| {
            let shown = match &params.version {
                Some(version) => format!("{name}@{version}"),
                None => name.clone(),
            };
            ApiError::not_found(format!("component {shown:?} not found"))
        })?;
    let job_types = store
        .list_job_types(Some(&caller.tenant))
        .await?
        .into_iter()
        .filter(|t| t.component_id == record.id)
        .map(|t| t.name)
        .collect();
    Ok(Json(ComponentDetail::new(record, job_types)))
}
