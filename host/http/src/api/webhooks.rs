//! `/v1/webhooks`: the caller's tenant's webhook endpoints, the HTTP face of
//! `sluice webhooks` (docs/webhooks.md): create (answers the signing secret,
//! once), list, show, update, delete, rotate the secret, send a test event. Deliveries and
//! events are in `events`.
//!
//! Thin: `sluice_shared::webhooks` makes and seals secrets, the store checks every field and
//! scopes every statement by the caller's tenant (another tenant's endpoint is a 404).
//! Must not: return a secret anywhere but create and rotate-secret, log one, or send
//! anything (the worker delivers).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Deserializer};
use sluice_store::{EndpointUpdate, NewEndpoint, parse_endpoint_id};
use utoipa::ToSchema;

use super::auth::Caller;
use super::error::{ApiError, ApiJson, ApiPath, ErrorBody};
use super::state::AppState;
use super::validate;
use sluice_shared::webhooks::{self as hooks, DEFAULT_ROTATION_GRACE, EndpointError};
use sluice_wire::webhooks::{self as views, EndpointView, TestSent, event_label};

/// An endpoint to create.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateEndpointRequest {
    /// `http://` or `https://`, at most 2048 characters. Whether the destination may be
    /// reached is checked when a delivery is sent.
    #[schema(
        min_length = 1,
        max_length = 2048,
        examples("https://example.com/hooks")
    )]
    pub url: String,
    /// 1 to 64 event type patterns: `invoice.paid`, `invoice.*` or `*`.
    #[schema(min_items = 1, max_items = 64, examples(json!(["invoice.*"])))]
    pub events: Vec<String>,
    /// Free text, at most 1024 characters.
    #[schema(max_length = 1024)]
    pub description: Option<String>,
    /// Delays before retries after attempt 1, 2, … as one-term durations (`["5s", "5m",
    /// "30m"]`; units `ms`, `s`, `m`, `h`, `d`), at most 20 steps of at most 7 days each;
    /// `[]`: never retry. Absent or null: the default schedule (5s, 5m, 30m, 2h, 5h, 10h,
    /// 10h).
    #[schema(max_items = 20, examples(json!(["5s", "5m", "30m"])))]
    pub retry_schedule: Option<Vec<String>>,
    /// Longest time one attempt may take, 100ms to 5m, one term (default `15s`).
    #[schema(examples("15s"))]
    pub timeout: Option<String>,
}

/// Fields to change; absent fields stay as they are.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateEndpointRequest {
    /// Absent or null: unchanged.
    #[schema(min_length = 1, max_length = 2048)]
    pub url: Option<String>,
    /// Absent or null: unchanged.
    #[schema(min_items = 1, max_items = 64)]
    pub events: Option<Vec<String>>,
    /// Absent or null: unchanged.
    #[schema(max_length = 1024)]
    pub description: Option<String>,
    /// `false` disables (reason: `disabled by its owner`); `true` enables and clears the
    /// reason. Absent or null: unchanged.
    pub enabled: Option<bool>,
    /// As in create; null goes back to the default schedule, absent leaves it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Vec<String>>, max_items = 20)]
    pub retry_schedule: Option<Option<Vec<String>>>,
    /// Absent or null: unchanged.
    pub timeout: Option<String>,
}

/// A field that is present (even as null) is `Some`; absent is `None` (serde default).
fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// How long the old secret keeps signing.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RotateRequest {
    /// A one-term duration up to 30 days (`24h`, the default; `0s` stops the old secret
    /// at once).
    #[schema(examples("24h"))]
    pub grace: Option<String>,
}

/// An endpoint id from the path (`ep_12` or `12`).
pub(super) fn endpoint_id(text: &str) -> Result<i64, ApiError> {
    validate::text("endpoint id", text)?;
    parse_endpoint_id(text).map_err(|e| ApiError::bad_request(e.to_string()))
}

fn bad(message: String) -> ApiError {
    ApiError::bad_request(message)
}

fn texts(field: &str, values: &[String]) -> Result<(), ApiError> {
    values.iter().try_for_each(|v| validate::text(field, v))
}

/// `EndpointError` as an answer: no key is a 503, as for `PUT /v1/secrets/{name}`.
fn endpoint_error(e: EndpointError) -> ApiError {
    match e {
        EndpointError::NoKey => ApiError {
            retry_after: Some(60),
            ..ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "secrets_key_missing",
                "this server has no secrets key to seal signing secrets with (start `sluice serve` with --secrets-key-file or SLUICE_SECRETS_KEY)",
            )
        },
        EndpointError::Seal(e) => ApiError::internal(e),
        EndpointError::Store(e) => e.into(),
    }
}

/// Create an endpoint; the answer holds its signing secret, shown this once.
#[utoipa::path(
    post, path = "/v1/webhooks", tag = "webhooks",
    request_body = CreateEndpointRequest,
    responses(
        (status = 201, description = "Created; `secret` is never shown again", body = EndpointView),
        (status = 400, description = "A malformed field: URL, pattern, duration, … (named)", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 409, description = "The tenant already has the most endpoints it may have (100)", body = ErrorBody),
        (status = 503, description = "The server has no secrets key (code `secrets_key_missing`), or the database is unavailable", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn create_endpoint(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(request): ApiJson<CreateEndpointRequest>,
) -> Result<(StatusCode, Json<EndpointView>), ApiError> {
    validate::text("url", &request.url)?;
    texts("events", &request.events)?;
    validate::text_opt("description", request.description.as_deref())?;
    let spec = NewEndpoint {
        tenant: caller.tenant.clone(),
        url: request.url,
        events: request.events,
        description: request.description.unwrap_or_default(),
        retry_schedule: request
            .retry_schedule
            .map(|s| views::schedule("retry_schedule", &s))
            .transpose()
            .map_err(bad)?,
        timeout: request
            .timeout
            .map(|t| views::duration("timeout", &t))
            .transpose()
            .map_err(bad)?,
    };
    let keyring = state.config().secrets.as_ref();
    let (info, secret) = hooks::create_endpoint(state.store(), keyring, &spec)
        .await
        .map_err(endpoint_error)?;
    Ok((
        StatusCode::CREATED,
        Json(EndpointView::with_secret(info, secret)),
    ))
}

/// The tenant's endpoints, oldest first (never their secrets).
#[utoipa::path(
    get, path = "/v1/webhooks", tag = "webhooks",
    responses((status = 200, body = Vec<EndpointView>), (status = 401, body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn list_endpoints(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Vec<EndpointView>>, ApiError> {
    let endpoints = state.store().list_webhook_endpoints(&caller.tenant).await?;
    Ok(Json(endpoints.into_iter().map(Into::into).collect()))
}

/// One endpoint.
#[utoipa::path(
    get, path = "/v1/webhooks/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "Endpoint id, `ep_12` (or `12`)")),
    responses(
        (status = 200, body = EndpointView),
        (status = 400, description = "Not an endpoint id", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, description = "The tenant has no such endpoint", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn get_endpoint(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<EndpointView>, ApiError> {
    let id = endpoint_id(&id)?;
    let info = state
        .store()
        .get_webhook_endpoint(&caller.tenant, id)
        .await?;
    Ok(Json(info.into()))
}

/// Change an endpoint's URL, filter, description, state, retry schedule or timeout.
#[utoipa::path(
    patch, path = "/v1/webhooks/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "Endpoint id, `ep_12` (or `12`)")),
    request_body = UpdateEndpointRequest,
    responses(
        (status = 200, description = "The endpoint as changed", body = EndpointView),
        (status = 400, description = "A malformed field (named), or not an endpoint id", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, description = "The tenant has no such endpoint", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn update_endpoint(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(request): ApiJson<UpdateEndpointRequest>,
) -> Result<Json<EndpointView>, ApiError> {
    let id = endpoint_id(&id)?;
    validate::text_opt("url", request.url.as_deref())?;
    texts("events", request.events.as_deref().unwrap_or_default())?;
    validate::text_opt("description", request.description.as_deref())?;
    let update = EndpointUpdate {
        url: request.url,
        events: request.events,
        description: request.description,
        enabled: request.enabled,
        retry_schedule: request
            .retry_schedule
            .map(|s| s.map(|s| views::schedule("retry_schedule", &s)).transpose())
            .transpose()
            .map_err(bad)?,
        timeout: request
            .timeout
            .map(|t| views::duration("timeout", &t))
            .transpose()
            .map_err(bad)?,
    };
    let info = state
        .store()
        .update_webhook_endpoint(&caller.tenant, id, &update)
        .await?;
    Ok(Json(info.into()))
}

/// Delete an endpoint; its pending deliveries end `cancelled`.
#[utoipa::path(
    delete, path = "/v1/webhooks/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "Endpoint id, `ep_12` (or `12`)")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "Not an endpoint id", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, description = "The tenant has no such endpoint", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn delete_endpoint(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    let id = endpoint_id(&id)?;
    state
        .store()
        .delete_webhook_endpoint(&caller.tenant, id)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Give an endpoint a new signing secret (answered once); the previous one keeps signing
/// beside it for `grace`, so receivers can switch without missing a delivery.
#[utoipa::path(
    post, path = "/v1/webhooks/{id}/rotate-secret", tag = "webhooks",
    params(("id" = String, Path, description = "Endpoint id, `ep_12` (or `12`)")),
    request_body = RotateRequest,
    responses(
        (status = 200, description = "Rotated; `secret` is the new one, never shown again", body = EndpointView),
        (status = 400, description = "A malformed grace, or not an endpoint id", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, description = "The tenant has no such endpoint", body = ErrorBody),
        (status = 503, description = "The server has no secrets key (code `secrets_key_missing`), or the database is unavailable", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn rotate_secret(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(request): ApiJson<RotateRequest>,
) -> Result<Json<EndpointView>, ApiError> {
    let id = endpoint_id(&id)?;
    let grace = match request.grace {
        Some(text) => views::grace("grace", &text).map_err(bad)?,
        None => DEFAULT_ROTATION_GRACE,
    };
    let keyring = state.config().secrets.as_ref();
    let (info, secret) = hooks::rotate_secret(state.store(), keyring, &caller.tenant, id, grace)
        .await
        .map_err(endpoint_error)?;
    Ok(Json(EndpointView::with_secret(info, secret)))
}

/// Send a `sluice.test` event to this endpoint only, whatever its filter (a disabled endpoint's test delivery ends cancelled).
#[utoipa::path(
    post, path = "/v1/webhooks/{id}/test", tag = "webhooks",
    params(("id" = String, Path, description = "Endpoint id, `ep_12` (or `12`)")),
    responses(
        (status = 202, description = "The event and its delivery (a job id)", body = TestSent),
        (status = 400, description = "Not an endpoint id", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, description = "The tenant has no such endpoint", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn test_endpoint(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<(StatusCode, Json<TestSent>), ApiError> {
    let id = endpoint_id(&id)?;
    let (event, delivery) = state
        .store()
        .send_test_event(&caller.tenant, id, &views::test_payload(id))
        .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(TestSent {
            event: event_label(event),
            delivery,
        }),
    ))
}
