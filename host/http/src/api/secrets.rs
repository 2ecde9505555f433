//! `/v1/secrets`: the caller's tenant's secrets, write-only — the HTTP face of
//! `sluice secrets` (docs/secrets.md). `PUT /v1/secrets/{name}` takes `{"value": "…"}`
//! (JSON, like every other request body of this API) and answers the secret's metadata;
//! `GET /v1/secrets` lists names, sizes, key ids and times; `DELETE` removes one.
//!
//! Must not: return, log or echo a value (errors name the field and the limit only), or
//! touch another tenant's secrets (every store call is scoped to the caller's tenant).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::ToSchema;

use super::auth::Caller;
use super::error::{ApiError, ApiJson, ApiPath, ErrorBody};
use super::state::AppState;
use sluice_shared::secrets::{self as host_secrets, SetSecretError};
use sluice_wire::SecretView;

/// A secret's value. Text (UTF-8, no NUL), at most 64 KiB.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SecretRequest {
    #[schema(max_length = 65536)]
    pub value: String,
}

impl std::fmt::Debug for SecretRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretRequest { .. }")
    }
}

/// Set (or replace) a secret of the caller's tenant.
#[utoipa::path(
    put, path = "/v1/secrets/{name}", tag = "secrets",
    params(("name" = String, Path, description = "`[A-Za-z_][A-Za-z0-9_]*`, 1 to 128 characters", min_length = 1, max_length = 128, pattern = "^[A-Za-z_][A-Za-z0-9_]{0,127}$")),
    request_body = SecretRequest,
    responses(
        (status = 200, description = "Set; the value is never returned", body = SecretView),
        (status = 400, description = "A malformed name, or a value over 64 KiB or holding NUL (the field is named)", body = ErrorBody),
        (status = 401, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn put_secret(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
    ApiJson(request): ApiJson<SecretRequest>,
) -> Result<Json<SecretView>, ApiError> {
    let keyring = state.config().secrets.as_ref();
    let info = host_secrets::set_secret(state.store(), keyring, &caller.tenant, &name, &request.value)
        .await
        .map_err(|e| match e {
            SetSecretError::NoKey => ApiError {
                retry_after: Some(60),
                ..ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "secrets_key_missing",
                    "this server has no secrets key (start `sluice serve` with --secrets-key-file or SLUICE_SECRETS_KEY)",
                )
            },
            SetSecretError::Seal(e) => ApiError::internal(e),
            SetSecretError::Store(e) => e.into(),
        })?;
    Ok(Json(info.into()))
}

/// The caller's tenant's secrets, by name, without values.
#[utoipa::path(
    get, path = "/v1/secrets", tag = "secrets",
    responses((status = 200, body = Vec<SecretView>), (status = 401, body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn list_secrets(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Vec<SecretView>>, ApiError> {
    let secrets = state.store().list_secrets(&caller.tenant).await?;
    Ok(Json(secrets.into_iter().map(Into::into).collect()))
}

/// Delete a secret of the caller's tenant (types granted it then get `not-found`).
#[utoipa::path(
    delete, path = "/v1/secrets/{name}", tag = "secrets",
    params(("name" = String, Path, description = "Secret name")),
    responses((status = 204, description = "Deleted"), (status = 401, body = ErrorBody), (status = 404, description = "The tenant has no secret of this name", body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn delete_secret(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    if state.store().delete_secret(&caller.tenant, &name).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found(format!(
            "no secret {name:?} for this tenant; GET /v1/secrets lists them"
        )))
    }
}
