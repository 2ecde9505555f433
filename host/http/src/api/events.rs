//! `POST /v1/events` (send an event to every matching, enabled endpoint of the caller's
//! tenant: what `sluice.send_event(...)` does in SQL) and the deliveries under
//! `/v1/webhooks`: an endpoint's history, one delivery, a redelivery. The HTTP face of
//! `sluice events send` and `sluice webhooks deliveries|redeliver`.
//!
//! Thin: the store stores the event and enqueues the deliveries in one statement, scoped
//! by the caller's tenant (another tenant's delivery is a 404). Must not: send anything
//! (the worker delivers) or show a signing secret.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use sluice_store::StoreError;
use utoipa::{IntoParams, ToSchema};

use super::auth::Caller;
use super::error::{ApiError, ApiJson, ApiPath, ApiQuery, ErrorBody};
use super::state::AppState;
use super::trace_context::{IncomingTrace, TraceHeaderParams};
use super::validate;
use super::webhooks::endpoint_id;
use sluice_wire::schemas;
use sluice_wire::webhooks::{self as views, DeliveryView, EventAccepted, Redelivered, event_label};

/// An event to send.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EventRequest {
    /// 1 to 128 of letters, digits, `_`, `.` and `-`, not starting with `.` or `-`.
    #[serde(rename = "type")]
    #[schema(min_length = 1, max_length = 128, examples("invoice.paid"))]
    pub event_type: String,
    /// Sent as the event's `data` (absent or null: `{}`); the whole event must fit the
    /// tenant's payload limit.
    #[schema(schema_with = schemas::any_json)]
    pub payload: Option<serde_json::Value>,
    /// A repeated key (per tenant) answers the first event's id and sends nothing.
    #[schema(min_length = 1, max_length = 255)]
    pub idempotency_key: Option<String>,
}

/// Paging of an endpoint's deliveries.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DeliveriesParams {
    /// Newest first, at most this many, 1 to 1000 (default 50).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
}

/// Send an event: one delivery per enabled endpoint whose filter matches its type.
#[utoipa::path(
    post, path = "/v1/events", tag = "webhooks",
    params(TraceHeaderParams),
    request_body = EventRequest,
    responses(
        (status = 202, description = "Stored, its deliveries enqueued (the same id for a repeated idempotency key)", body = EventAccepted),
        (status = 400, description = "A malformed type, payload or idempotency key (named)", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 413, description = "The event is over the tenant's payload limit", body = ErrorBody),
        (status = 429, description = "Over the tenant's enqueue rate", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn send_event(
    State(state): State<AppState>,
    caller: Caller,
    incoming: IncomingTrace,
    ApiJson(request): ApiJson<EventRequest>,
) -> Result<(StatusCode, Json<EventAccepted>), ApiError> {
    validate::text("type", &request.event_type)?;
    validate::text_opt("idempotency_key", request.idempotency_key.as_deref())?;
    let payload = request.payload.unwrap_or_else(|| serde_json::json!({}));
    views::payload_text("payload", &payload).map_err(ApiError::bad_request)?;
    caller.take_enqueue_tokens(&state, 1)?;
    let trace = incoming.enqueue(&state.config().tracer, "/v1/events", || {
        format!("send event {}", request.event_type)
    });
    let sent = state
        .store()
        .send_event(
            &caller.tenant,
            &request.event_type,
            &payload,
            request.idempotency_key.as_deref(),
            trace.stored.as_ref(),
        )
        .await
        .map_err(|e| match e {
            StoreError::InvalidInput {
                field: "payload",
                message,
            } => ApiError::too_large(message),
            StoreError::InvalidInput {
                field: "event_type",
                message,
            } => ApiError::bad_request(format!("invalid type: {message}")),
            other => other.into(),
        });
    let id = match sent {
        Ok(id) => {
            trace.end(&caller.tenant, Ok(&[]));
            id
        }
        Err(error) => {
            trace.end(&caller.tenant, Err(error.status.as_u16()));
            return Err(error);
        }
    };
    Ok((
        StatusCode::ACCEPTED,
        Json(EventAccepted {
            id: event_label(id),
        }),
    ))
}

/// An endpoint's deliveries, newest first.
#[utoipa::path(
    get, path = "/v1/webhooks/{id}/deliveries", tag = "webhooks",
    params(("id" = String, Path, description = "Endpoint id, `ep_12` (or `12`)"), DeliveriesParams),
    responses(
        (status = 200, body = Vec<DeliveryView>),
        (status = 400, description = "Not an endpoint id, or a limit out of range", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, description = "The tenant has no such endpoint", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn list_deliveries(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(params): ApiQuery<DeliveriesParams>,
) -> Result<Json<Vec<DeliveryView>>, ApiError> {
    let id = endpoint_id(&id)?;
    let limit = params.limit.unwrap_or(50);
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::bad_request(format!(
            "invalid limit: {limit}, expected 1 to 1000"
        )));
    }
    // A 404 for an endpoint the tenant does not have (deleted endpoints keep no history
    // here: their deliveries stay readable as jobs).
    let store = state.store();
    store.get_webhook_endpoint(&caller.tenant, id).await?;
    let deliveries = store.webhook_deliveries(&caller.tenant, id, limit).await?;
    Ok(Json(deliveries.into_iter().map(Into::into).collect()))
}

/// One delivery.
#[utoipa::path(
    get, path = "/v1/webhooks/deliveries/{id}", tag = "webhooks",
    params(("id" = i64, Path, description = "Delivery (job) id")),
    responses(
        (status = 200, body = DeliveryView),
        (status = 401, body = ErrorBody),
        (status = 404, description = "The tenant has no such delivery", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn get_delivery(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<DeliveryView>, ApiError> {
    let delivery = state.store().webhook_delivery(&caller.tenant, id).await?;
    Ok(Json(delivery.into()))
}

/// Send a delivery's event again to its endpoint, as a new delivery (the same
/// `webhook-id`, so receivers can drop duplicates).
#[utoipa::path(
    post, path = "/v1/webhooks/deliveries/{id}/redeliver", tag = "webhooks",
    params(("id" = i64, Path, description = "Delivery (job) id")),
    responses(
        (status = 202, description = "The new delivery (a job id)", body = Redelivered),
        (status = 401, body = ErrorBody),
        (status = 404, description = "The tenant has no such delivery, or its endpoint was deleted", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn redeliver(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<i64>,
) -> Result<(StatusCode, Json<Redelivered>), ApiError> {
    let delivery = state.store().redeliver(&caller.tenant, id).await?;
    Ok((StatusCode::ACCEPTED, Json(Redelivered { delivery })))
}
