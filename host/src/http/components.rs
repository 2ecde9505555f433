//! Component endpoints: upload (raw bytes, validated by the sandbox exactly like
//! `sluice component push`) and list. The body limit is the tenant's
//! `max_component_bytes` (or the server default): a larger body is refused with 413
//! before it is read in full.
//!
//! Must not: store anything the sandbox has not validated.

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sluice_sandbox::ValidationError;
use sluice_store::{ComponentRecord, NewComponent};
use utoipa::{IntoParams, ToSchema};

use super::auth::Caller;
use super::error::{ApiError, ApiPath, ApiQuery, ErrorBody};
use super::schemas;
use super::state::AppState;
use super::validate;

/// A stored component (without its bytes).
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ComponentView {
    #[schema(minimum = 1)]
    pub id: i64,
    #[schema(min_length = 1, max_length = 128)]
    pub name: String,
    #[schema(min_length = 1, max_length = 64)]
    pub version: String,
    /// Lowercase hex SHA-256 of the bytes.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub sha256: String,
    /// Bytes.
    #[schema(minimum = 1)]
    pub size: i64,
    /// The task contract the component targets, e.g. `sluice:task@0.2.0` (found at upload
    /// from its imports); a host runs it only if it runs that contract.
    #[schema(pattern = "^sluice:task@0\\.[0-9]+\\.0$")]
    pub contract: String,
    pub created_at: DateTime<Utc>,
}

impl From<ComponentRecord> for ComponentView {
    fn from(c: ComponentRecord) -> Self {
        ComponentView {
            id: c.id,
            name: c.name,
            version: c.version,
            sha256: c.sha256,
            size: c.size,
            contract: format!("sluice:task@0.{}.0", c.contract),
            created_at: c.created_at,
        }
    }
}

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
