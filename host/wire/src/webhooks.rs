//! How webhook endpoints, deliveries and events look in JSON: the bodies of the
//! `/v1/webhooks` and `/v1/events` answers, also printed by `sluice webhooks … --json` and
//! `sluice events send --json`, so that a script sees the same object from either. Ids
//! are shown as people type them: endpoints `ep_N`, events `evt_N`, deliveries by their
//! job id (a number: `GET /v1/jobs/{id}` shows the same job). Durations are strings in
//! the syntax requests take (`5s`, `30m`, `2h`).
//!
//! Owns: these shapes and the conversions from `sluice_store`'s rows, and the parsing of
//! the duration lists and grace both surfaces accept. Must not: read or write anything,
//! or ever hold a signing secret except the one `create` / `rotate-secret` return.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;
use sluice_store::{DEFAULT_RETRY_SCHEDULE, DeliveryInfo, EndpointInfo};
use utoipa::ToSchema;

use sluice_shared::units::parse_duration;

/// Longest grace a rotated-out secret may keep signing for.
pub const MAX_ROTATION_GRACE: Duration = Duration::from_secs(30 * 24 * 3600);

/// A webhook endpoint. `secret` is only present in the answer of create and
/// rotate-secret: it is shown once and never again.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EndpointView {
    /// `ep_<number>`.
    #[schema(pattern = "^ep_[0-9]+$", examples("ep_1"))]
    pub id: String,
    /// The tenant whose events the endpoint receives.
    pub tenant: String,
    /// Where events are POSTed (`http://` or `https://`).
    pub url: String,
    /// Event type patterns: `invoice.paid`, `invoice.*` (every type under `invoice.`) or `*`.
    pub events: Vec<String>,
    /// Free text from its owner; empty if none.
    pub description: String,
    /// Disabled endpoints receive nothing new (by their owner, or after a 410 Gone).
    pub enabled: bool,
    /// Why it is disabled, e.g. `disabled by its owner`.
    pub disabled_reason: Option<String>,
    /// Delays before retries after attempt 1, 2, … (`5s`, `5m`, …); null: the default
    /// schedule (5s, 5m, 30m, 2h, 5h, 10h, 10h).
    pub retry_schedule: Option<Vec<String>>,
    /// Longest time one attempt may take (`15s`).
    pub timeout: String,
    /// Which operator key sealed the signing secret (a fingerprint, never the key).
    #[schema(pattern = "^[0-9a-f]{16}$")]
    pub key_id: String,
    /// After a rotation: until when the previous secret still signs beside the current
    /// one (null when it no longer does).
    pub previous_secret_until: Option<DateTime<Utc>>,
    /// When the endpoint was created.
    pub created_at: DateTime<Utc>,
    /// When it was last changed: updated, disabled, or its secret rotated (re-sealing under
    /// a new operator key keeps it).
    pub updated_at: DateTime<Utc>,
    /// The signing secret (`whsec_…`): only in the answer of create and rotate-secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^whsec_")]
    pub secret: Option<String>,
}

impl EndpointView {
    /// The endpoint as shown, with the secret just made (create, rotate-secret).
    pub fn with_secret(info: EndpointInfo, secret: String) -> Self {
        EndpointView {
            secret: Some(secret),
            ..info.into()
        }
    }
}

impl From<EndpointInfo> for EndpointView {
    fn from(e: EndpointInfo) -> Self {
        EndpointView {
            id: endpoint_label(e.id),
            tenant: e.tenant,
            url: e.url,
            events: e.events,
            description: e.description,
            enabled: e.enabled,
            disabled_reason: e.disabled_reason,
            retry_schedule: e
                .retry_schedule_ms
                .map(|steps| steps.into_iter().map(format_ms).collect()),
            timeout: format_ms(i64::from(e.timeout_ms)),
            key_id: e.key_id,
            previous_secret_until: e.previous_until,
            created_at: e.created_at,
            updated_at: e.updated_at,
            secret: None,
        }
    }
}

/// One delivery of an event to an endpoint: a job of type `sluice.webhook`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeliveryView {
    /// The delivery's job id (`GET /v1/jobs/{id}` shows the job).
    #[schema(minimum = 1)]
    pub id: i64,
    /// The endpoint it is sent to, as `ep_N`.
    #[schema(pattern = "^ep_[0-9]+$")]
    pub endpoint: String,
    /// The event it carries, as `evt_N` (its `webhook-id` is derived from the event and the
    /// endpoint).
    #[schema(pattern = "^evt_[0-9]+$")]
    pub event: String,
    /// Null once retention removed the event.
    pub event_type: Option<String>,
    /// The job's state: `pending` (waiting for its next attempt), `running`,
    /// `completed` (a 2xx answer), `dead` (attempts used up, or a permanent refusal) or
    /// `cancelled`.
    pub state: String,
    /// Attempts made so far.
    pub attempt: i32,
    /// Attempts it may make before it is dead.
    pub max_attempts: i32,
    /// When the next attempt is due (pending), or was.
    pub run_at: DateTime<Utc>,
    /// When the delivery was made: when the event was sent, or a redelivery asked.
    pub created_at: DateTime<Utc>,
    /// When it completed, died or was cancelled; null while pending or running.
    pub finished_at: Option<DateTime<Utc>>,
    /// Why the last attempt failed (the status and first bytes, or the network error); null
    /// if none did.
    pub last_error: Option<String>,
    /// The HTTP status of the last answer, when there was one.
    pub last_status: Option<i32>,
    /// The first bytes of the 2xx answer that completed it.
    pub response: Option<String>,
}

impl From<DeliveryInfo> for DeliveryView {
    fn from(d: DeliveryInfo) -> Self {
        DeliveryView {
            id: d.id,
            endpoint: endpoint_label(d.endpoint),
            event: event_label(d.event),
            event_type: d.event_type,
            state: d.state,
            attempt: d.attempt,
            max_attempts: d.max_attempts,
            run_at: d.run_at,
            created_at: d.created_at,
            finished_at: d.finished_at,
            last_error: d.last_error,
            last_status: d.last_status,
            response: d.response,
        }
    }
}

/// An event accepted: its id (the same for a repeated idempotency key).
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EventAccepted {
    /// The event's id, `evt_N`.
    #[schema(pattern = "^evt_[0-9]+$", examples("evt_1"))]
    pub id: String,
}

/// A test event sent to one endpoint, and its delivery (a job id).
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TestSent {
    /// The test event's id, `evt_N`.
    #[schema(pattern = "^evt_[0-9]+$")]
    pub event: String,
    /// The job id of its delivery to the endpoint.
    #[schema(minimum = 1)]
    pub delivery: i64,
}

/// A new delivery of an event already sent (the same `webhook-id`, a new job).
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Redelivered {
    /// The job id of the new delivery.
    #[schema(minimum = 1)]
    pub delivery: i64,
}

pub use sluice_shared::webhooks::{endpoint_label, event_label};

/// What a `sluice.test` event carries under `data`.
pub fn test_payload(endpoint: i64) -> serde_json::Value {
    serde_json::json!({
        "message": "a test event from Sluice",
        "endpoint": endpoint_label(endpoint),
    })
}

/// A stored millisecond count as a duration string (`5s`, `1h 30m`, `250ms`).
pub fn format_ms(ms: i64) -> String {
    humantime::format_duration(Duration::from_millis(ms.max(0) as u64)).to_string()
}

/// The default retry schedule as shown (`5s, 5m, 30m, 2h, 5h, 10h, 10h`).
pub fn default_schedule_text() -> String {
    DEFAULT_RETRY_SCHEDULE
        .iter()
        .map(|d| humantime::format_duration(*d).to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parses a duration named `field` (`timeout`, `grace`), saying which one is wrong.
pub fn duration(field: &str, text: &str) -> Result<Duration, String> {
    parse_duration(text).map_err(|e| format!("invalid {field}: {e}"))
}

/// Parses a retry schedule (`["5s", "5m"]`; an empty list: never retry).
pub fn schedule(field: &str, steps: &[String]) -> Result<Vec<Duration>, String> {
    steps
        .iter()
        .enumerate()
        .map(|(i, step)| parse_duration(step).map_err(|e| format!("invalid {field}[{i}]: {e}")))
        .collect()
}

/// Parses the grace of a rotation; at most [`MAX_ROTATION_GRACE`].
pub fn grace(field: &str, text: &str) -> Result<Duration, String> {
    let grace = duration(field, text)?;
    if grace > MAX_ROTATION_GRACE {
        return Err(format!(
            "invalid {field}: `{text}` is longer than 30 days; the previous secret must stop signing sooner"
        ));
    }
    Ok(grace)
}

/// Refuses JSON that holds a NUL character (U+0000) in a string or a key: the event
/// body is stored as `jsonb`, which cannot hold it. The rule is the store's
/// ([`sluice_store::json_nul_at`]); this names the field as the caller wrote it.
pub fn payload_text(field: &str, value: &serde_json::Value) -> Result<(), String> {
    match sluice_store::json_nul_at(value) {
        None => Ok(()),
        Some(at) => Err(format!(
            "invalid {field}: holds a NUL character (\\u0000) at {at}; PostgreSQL's jsonb cannot hold it"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_round_trip_through_their_text() {
        for ms in [250, 5_000, 300_000, 5_400_000, 36_000_000] {
            let text = format_ms(ms);
            assert_eq!(
                parse_duration(&text).unwrap(),
                Duration::from_millis(ms as u64),
                "{text}"
            );
        }
        assert_eq!(default_schedule_text(), "5s, 5m, 30m, 2h, 5h, 10h, 10h");
        assert!(
            schedule("retry_schedule", &["5s".into(), "soon".into()])
                .unwrap_err()
                .starts_with("invalid retry_schedule[1]:")
        );
        assert!(grace("grace", "31d").unwrap_err().contains("30 days"));
        assert_eq!(grace("grace", "24h").unwrap(), Duration::from_secs(86400));
    }

    #[test]
    fn payloads_with_nul_are_refused_wherever_it_hides() {
        let ok = serde_json::json!({"a": ["b", {"c": 1}]});
        assert!(payload_text("payload", &ok).is_ok());
        for bad in [
            serde_json::json!("a\u{0}"),
            serde_json::json!({"k\u{0}": 1}),
            serde_json::json!([{"k": ["\u{0}"]}]),
        ] {
            assert!(payload_text("payload", &bad).is_err(), "{bad}");
        }
    }
}
