//! Webhook events and deliveries (migration 0016): sending an event (the transactional
//! outbox's `sluice.send_event`), test pings, redelivery, what a delivery sends (read at
//! send time), the delivery history, and the retention of events.
//!
//! A delivery is a job of type [`crate::WEBHOOK_JOB_TYPE`] whose payload is
//! `{"endpoint": <id>, "event": <id>}`; its state, attempts and errors are the job's.
//! Must not: decrypt a secret, send anything, or return a row of another tenant than the
//! one asked for.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::trace_headers::{TraceHeaders, check_traceparent};
use crate::webhooks::SealedValue;
use crate::{Store, StoreError, micros, text};

/// A delivery as listed: the job's state with the endpoint's answer.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct DeliveryInfo {
    /// The delivery's job id.
    pub id: i64,
    /// The endpoint it is sent to (`sluice.webhook_endpoints.id`).
    pub endpoint: i64,
    /// The event it carries (`sluice.webhook_events.id`).
    pub event: i64,
    /// `None` once retention pruned the event.
    pub event_type: Option<String>,
    /// The job's state as stored: `pending`, `running`, `completed`, `dead` or `cancelled`.
    pub state: String,
    /// Attempts made (the one running included).
    pub attempt: i32,
    /// Attempts it may make before it is dead.
    pub max_attempts: i32,
    /// When the next attempt is due (pending) or was due.
    pub run_at: DateTime<Utc>,
    /// When the delivery job was made (the event sent, or a redelivery asked).
    pub created_at: DateTime<Utc>,
    /// When it completed, died or was cancelled; `None` while pending or running.
    pub finished_at: Option<DateTime<Utc>>,
    /// Why its last attempt failed; `None` if none did.
    pub last_error: Option<String>,
    /// The HTTP status of the last answer, when there was one.
    pub last_status: Option<i32>,
    /// The first bytes of the 2xx answer that completed it.
    pub response: Option<String>,
}

/// What one delivery sends, read when it is sent.
#[derive(Clone, Debug)]
pub struct DeliveryTarget {
    /// `None`: the endpoint was deleted.
    pub endpoint: Option<EndpointForSend>,
    /// `None`: the event is gone (retention).
    pub event: Option<(String, Vec<u8>)>,
}

/// An endpoint's settings at send time, with the secrets that sign (current first).
#[derive(Clone, Debug)]
pub struct EndpointForSend {
    /// Where to POST.
    pub url: String,
    /// Its patterns now: a delivery whose event type no longer matches is cancelled.
    pub events: Vec<String>,
    /// False: the delivery is cancelled, not sent.
    pub enabled: bool,
    /// Why it is disabled, named in the cancel reason.
    pub disabled_reason: Option<String>,
    /// The sealed signing secrets, current first, then the previous one during its grace;
    /// each signs the request.
    pub secrets: Vec<SealedValue>,
    /// Retry delays in milliseconds after attempt 1, 2, …; `None`: the default schedule.
    pub retry_schedule_ms: Option<Vec<i64>>,
    /// Longest time the attempt may take, in milliseconds.
    pub timeout_ms: i32,
}

#[derive(sqlx::FromRow)]
struct TargetRow {
    url: Option<String>,
    events: Option<Vec<String>>,
    enabled: Option<bool>,
    disabled_reason: Option<String>,
    key_id: Option<String>,
    nonce: Option<Vec<u8>>,
    ciphertext: Option<Vec<u8>>,
    previous_key_id: Option<String>,
    previous_nonce: Option<Vec<u8>>,
    previous_ciphertext: Option<Vec<u8>>,
    retry_schedule_ms: Option<Vec<i64>>,
    timeout_ms: Option<i32>,
    event_type: Option<String>,
    body: Option<Vec<u8>>,
}

/// The reserved follow-up job type through which a task sends an event: a child of this
/// type is not inserted as a job; the completion that carries it calls
/// `sluice.send_event` in its own transaction (docs/webhooks.md).
pub const EVENT_JOB_TYPE: &str = "sluice.event";

/// The payload of a [`EVENT_JOB_TYPE`] follow-up: `{"type": ..., "payload": ...,
/// "idempotency_key": ...}` (the last two optional).
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventRequest {
    /// The event's type (`type` in JSON), e.g. `invoice.paid`.
    #[serde(rename = "type")]
    pub event_type: String,
    /// What receivers get under `data`; JSON `null` when absent.
    #[serde(default)]
    pub payload: serde_json::Value,
    /// Makes a repeated send return the first event instead of a new one (per tenant).
    #[serde(default)]
    pub idempotency_key: Option<String>,
}

impl EventRequest {
    /// Parses and checks a follow-up's payload; the error names the problem.
    pub fn parse(bytes: &[u8]) -> Result<EventRequest, StoreError> {
        let request: EventRequest =
            serde_json::from_slice(bytes).map_err(|e| StoreError::InvalidInput {
                field: "payload",
                message: format!(
                    "a `{EVENT_JOB_TYPE}` payload is {{\"type\": \"invoice.paid\", \"payload\": {{...}}, \"idempotency_key\": \"...\"}}: {e}"
                ),
            })?;
        crate::webhook_rules::validate_event_type(&request.event_type)?;
        text::check_json("payload", &request.payload)?;
        if let Some(key) = &request.idempotency_key {
            check_key(key)?;
        }
        Ok(request)
    }
}

fn check_key(key: &str) -> Result<(), StoreError> {
    text::check("idempotency_key", key)?;
    if key.is_empty() || key.chars().count() > 255 {
        return Err(StoreError::InvalidInput {
            field: "idempotency_key",
            message: "1 to 255 characters".into(),
        });
    }
    Ok(())
}

/// Events kept at least this long (and while a delivery still needs them).
pub const EVENT_RETENTION: Duration = Duration::from_secs(30 * 24 * 3600);

const SEND_EVENT: &str = include_str!("../sql/webhooks/send_event.sql");
const TEST_EVENT: &str = include_str!("../sql/webhooks/test_event.sql");
const TARGET: &str = include_str!("../sql/webhooks/target.sql");
const DELIVERIES: &str = include_str!("../sql/webhooks/deliveries.sql");
const REDELIVER: &str = include_str!("../sql/webhooks/redeliver.sql");
const PRUNE_EVENTS: &str = include_str!("../sql/webhooks/prune_events.sql");

impl Store {
    /// Stores an event and enqueues one delivery per matching, enabled endpoint (what
    /// `sluice.send_event` does in SQL); with a key the tenant already used, returns that
    /// event and enqueues nothing. Returns the event id.
    pub async fn send_event(
        &self,
        tenant: &str,
        event_type: &str,
        payload: &serde_json::Value,
        idempotency_key: Option<&str>,
        trace: Option<&TraceHeaders>,
    ) -> Result<i64, StoreError> {
        crate::webhook_rules::validate_event_type(event_type)?;
        if let Some(trace) = trace {
            check_traceparent(&trace.traceparent)?;
        }
        text::check_json("payload", payload)?;
        if let Some(key) = idempotency_key {
            check_key(key)?;
        }
        if !text::findable(tenant) {
            return Err(StoreError::UnknownTenant(tenant.to_owned()));
        }
        let mut conn = self.pool.acquire().await?;
        send_event_on(
            &mut conn,
            tenant,
            event_type,
            payload,
            idempotency_key,
            trace,
        )
        .await
    }

    /// Sends a `sluice.test` event to endpoint `id` only. Returns (event, delivery).
    pub async fn send_test_event(
        &self,
        tenant: &str,
        id: i64,
        payload: &serde_json::Value,
    ) -> Result<(i64, i64), StoreError> {
        let missing = || StoreError::NotFound {
            entity: "webhook endpoint",
            id: format!("ep_{id}"),
        };
        if !text::findable(tenant) {
            return Err(missing());
        }
        let row: Option<(i64, i64)> = sqlx::query_as(TEST_EVENT)
            .bind(tenant)
            .bind(id)
            .bind(sqlx::types::Json(payload))
            .fetch_optional(&self.pool)
            .await?;
        row.ok_or_else(missing)
    }

    /// A new delivery of the event of delivery `id` to its endpoint (the same
    /// `webhook-id`, a new job). Returns the new delivery's id.
    pub async fn redeliver(&self, tenant: &str, id: i64) -> Result<i64, StoreError> {
        let missing = || StoreError::NotFound {
            entity: "webhook delivery",
            id: id.to_string(),
        };
        if !text::findable(tenant) {
            return Err(missing());
        }
        let row: Option<Option<i64>> = sqlx::query_scalar(REDELIVER)
            .bind(tenant)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        match row {
            None => Err(missing()),
            Some(None) => Err(StoreError::NotFound {
                entity: "webhook endpoint of delivery",
                id: id.to_string(),
            }),
            Some(Some(new)) => Ok(new),
        }
    }

    /// What delivery of `event` to `endpoint` sends now, inside `tenant`.
    pub async fn webhook_target(
        &self,
        tenant: &str,
        endpoint: i64,
        event: i64,
    ) -> Result<DeliveryTarget, StoreError> {
        let row: TargetRow = sqlx::query_as(TARGET)
            .bind(tenant)
            .bind(endpoint)
            .bind(event)
            .fetch_one(&self.pool)
            .await?;
        let event = row.event_type.zip(row.body);
        let endpoint = match (row.url, row.key_id, row.nonce, row.ciphertext) {
            (Some(url), Some(key_id), Some(nonce), Some(ciphertext)) => {
                let mut secrets = vec![SealedValue {
                    key_id,
                    nonce,
                    ciphertext,
                }];
                if let (Some(key_id), Some(nonce), Some(ciphertext)) = (
                    row.previous_key_id,
                    row.previous_nonce,
                    row.previous_ciphertext,
                ) {
                    secrets.push(SealedValue {
                        key_id,
                        nonce,
                        ciphertext,
                    });
                }
                Some(EndpointForSend {
                    url,
                    events: row.events.unwrap_or_default(),
                    enabled: row.enabled.unwrap_or(false),
                    disabled_reason: row.disabled_reason,
                    secrets,
                    retry_schedule_ms: row.retry_schedule_ms,
                    timeout_ms: row.timeout_ms.unwrap_or(15_000),
                })
            }
            _ => None,
        };
        Ok(DeliveryTarget { endpoint, event })
    }

    /// Deliveries of `tenant`, newest first: to `endpoint`, at most `limit`.
    pub async fn webhook_deliveries(
        &self,
        tenant: &str,
        endpoint: i64,
        limit: u32,
    ) -> Result<Vec<DeliveryInfo>, StoreError> {
        if !text::findable(tenant) {
            return Ok(Vec::new());
        }
        Ok(sqlx::query_as(DELIVERIES)
            .bind(tenant)
            .bind(Some(endpoint))
            .bind(None::<i64>)
            .bind(i64::from(limit.clamp(1, 1000)))
            .fetch_all(&self.pool)
            .await?)
    }

    /// One delivery of `tenant`.
    pub async fn webhook_delivery(
        &self,
        tenant: &str,
        id: i64,
    ) -> Result<DeliveryInfo, StoreError> {
        let missing = || StoreError::NotFound {
            entity: "webhook delivery",
            id: id.to_string(),
        };
        if !text::findable(tenant) {
            return Err(missing());
        }
        let row: Option<DeliveryInfo> = sqlx::query_as(DELIVERIES)
            .bind(tenant)
            .bind(None::<i64>)
            .bind(Some(id))
            .bind(1_i64)
            .fetch_optional(&self.pool)
            .await?;
        row.ok_or_else(missing)
    }

    /// Retention: deletes up to `batch` events older than `age` that no unfinished
    /// delivery needs. Returns how many.
    pub async fn prune_webhook_events(&self, age: Duration, batch: u32) -> Result<u64, StoreError> {
        let n: i64 = sqlx::query_scalar(PRUNE_EVENTS)
            .bind(micros("age", age, false)?)
            .bind(i64::from(batch.max(1)))
            .fetch_one(&self.pool)
            .await?;
        Ok(n as u64)
    }
}

/// `sluice.send_event` on `conn` (a transaction's, for events sent by a completion).
pub(crate) async fn send_event_on(
    conn: &mut sqlx::PgConnection,
    tenant: &str,
    event_type: &str,
    payload: &serde_json::Value,
    idempotency_key: Option<&str>,
    trace: Option<&TraceHeaders>,
) -> Result<i64, StoreError> {
    sqlx::query_scalar(SEND_EVENT)
        .bind(tenant)
        .bind(event_type)
        .bind(sqlx::types::Json(payload))
        .bind(idempotency_key)
        .bind(trace.map(|t| t.traceparent.as_str()))
        .bind(trace.and_then(|t| t.tracestate.as_deref()))
        .fetch_one(conn)
        .await
        .map_err(|err| send_error(err, tenant))
}

/// `sluice.send_event`'s raised errors as the store's: unknown tenant, bad event type,
/// an event over the tenant's payload limit.
fn send_error(err: sqlx::Error, tenant: &str) -> StoreError {
    if let sqlx::Error::Database(db) = &err {
        match db.code().as_deref() {
            Some("23503") => return StoreError::UnknownTenant(tenant.to_owned()),
            Some("23514") => {
                return StoreError::InvalidInput {
                    field: "event_type",
                    message: db.message().to_owned(),
                };
            }
            Some("54000") => {
                return StoreError::InvalidInput {
                    field: "payload",
                    message: db.message().to_owned(),
                };
            }
            _ => {}
        }
    }
    StoreError::Database(err)
}
