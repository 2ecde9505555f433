//! How a job type looks in JSON ([`JobTypeView`]: `PUT`/`GET /v1/job-types/{type}`,
//! `GET /v1/job-types`, `sluice types set|list|show --json`). Limits are shown as stored,
//! in milliseconds and bytes; null means the host default, capped by the tenant's caps;
//! flow controls (docs/flow-control.md) as set, null for none.
//!
//! Owns: this shape and its conversion from `sluice_store::JobTypeRecord`. Must not: read
//! or write anything.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sluice_store::JobTypeRecord;
use utoipa::ToSchema;

/// A registered job type (null limits: the host default, capped by the tenant's caps).
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JobTypeView {
    /// The job type's name, unique within its tenant; jobs are enqueued with it as `type`.
    #[schema(min_length = 1, max_length = 128)]
    pub name: String,
    /// The id of the component (of the same tenant) its attempts run.
    #[schema(minimum = 1)]
    pub component_id: i64,
    /// Attempts a job of this type gets when it does not ask for its own number.
    #[schema(minimum = 1)]
    pub max_attempts: i32,
    /// Wall-clock limit of one attempt, in milliseconds; null: the host default.
    #[schema(required = true, minimum = 1)]
    pub timeout_ms: Option<i64>,
    /// Fuel (Wasm CPU units) one attempt may burn; null: the host default.
    #[schema(required = true, minimum = 1)]
    pub fuel: Option<i64>,
    /// Linear memory one attempt may grow to, in bytes, summed over its memories; null: the
    /// host default.
    #[schema(required = true, minimum = 1)]
    pub memory_bytes: Option<i64>,
    /// Largest output an attempt may return, in bytes; null: the host default.
    #[schema(required = true, minimum = 1)]
    pub output_bytes: Option<i64>,
    /// Log bytes kept per attempt (the rest is dropped and counted); null: the host
    /// default.
    #[schema(required = true, minimum = 1)]
    pub log_bytes: Option<i64>,
    /// Delay before the first retry, in milliseconds, doubled per attempt; null: the host
    /// default.
    #[schema(required = true, minimum = 0)]
    pub backoff_base_ms: Option<i64>,
    /// Longest delay between retries, in milliseconds; null: the host default.
    #[schema(required = true, minimum = 0)]
    pub backoff_cap_ms: Option<i64>,
    /// Fraction of the delay added or removed at random (0 to 1); null: the host default.
    #[schema(required = true, minimum = 0, maximum = 1)]
    pub backoff_jitter: Option<f64>,
    /// Destinations granted for outbound HTTP, normalised (`https://api.example.com:443`).
    pub allow_http: Vec<String>,
    /// Outbound requests one attempt may start (0: none); null: the host default.
    #[schema(required = true, minimum = 0)]
    pub http_max_requests: Option<i32>,
    /// Request body bytes per outbound request; null: the host default.
    #[schema(required = true, minimum = 1)]
    pub http_max_request_bytes: Option<i64>,
    /// Response body bytes per outbound request; null: the host default.
    #[schema(required = true, minimum = 1)]
    pub http_max_response_bytes: Option<i64>,
    /// Cap on connecting (TCP and TLS) per request, in milliseconds; null: the host
    /// default.
    #[schema(required = true, minimum = 1)]
    pub http_connect_timeout_ms: Option<i64>,
    /// Cap on the wait for the response head, in milliseconds; null: the host default.
    #[schema(required = true, minimum = 1)]
    pub http_first_byte_timeout_ms: Option<i64>,
    /// Cap on the wait between two chunks of the response body, in milliseconds; null: the
    /// host default.
    #[schema(required = true, minimum = 1)]
    pub http_between_bytes_timeout_ms: Option<i64>,
    /// Names of the tenant's secrets granted to the type.
    pub secrets: Vec<String>,
    /// Durable: every host call's result is journaled and a retried attempt replays
    /// them instead of repeating them (docs/durable.md).
    pub durable: bool,
    /// The cap on one job's journal (null: the host default, 16 MiB).
    #[schema(required = true, minimum = 1)]
    pub journal_bytes: Option<i64>,
    /// When the type was first registered.
    pub created_at: DateTime<Utc>,
    /// When it was last set (each `PUT` or `types set` rewrites it).
    pub updated_at: DateTime<Utc>,
    /// Paused: none of its jobs is claimed; running ones finish (docs/flow-control.md).
    pub paused: bool,
    /// Most of its jobs running at once, fleet-wide (null: no cap).
    #[schema(required = true, minimum = 1)]
    pub max_running: Option<i32>,
    /// Most of its jobs with one concurrency key running at once, fleet-wide.
    #[schema(required = true, minimum = 1)]
    pub max_running_per_key: Option<i32>,
    /// Its token bucket, `N/PERIOD` (`100/1m`: 100 a minute, bursting to 100).
    #[schema(required = true, example = "100/1m")]
    pub rate: Option<String>,
    /// The token bucket of each concurrency key, `N/PERIOD`.
    #[schema(required = true, example = "10/1s")]
    pub rate_per_key: Option<String>,
    /// Times one job may snooze before a snooze fails its attempt (null: the host's
    /// default, 25).
    #[schema(required = true, minimum = 0)]
    pub max_snoozes: Option<i32>,
}

impl From<JobTypeRecord> for JobTypeView {
    fn from(t: JobTypeRecord) -> Self {
        JobTypeView {
            name: t.name,
            component_id: t.component_id,
            max_attempts: t.max_attempts,
            timeout_ms: t.timeout_ms,
            fuel: t.fuel,
            memory_bytes: t.memory_bytes,
            output_bytes: t.output_bytes,
            log_bytes: t.log_bytes,
            backoff_base_ms: t.backoff_base_ms,
            backoff_cap_ms: t.backoff_cap_ms,
            backoff_jitter: t.backoff_jitter,
            allow_http: t.http_allow,
            http_max_requests: t.http_max_requests,
            http_max_request_bytes: t.http_request_bytes,
            http_max_response_bytes: t.http_response_bytes,
            http_connect_timeout_ms: t.http_connect_timeout_ms,
            http_first_byte_timeout_ms: t.http_first_byte_timeout_ms,
            http_between_bytes_timeout_ms: t.http_between_bytes_timeout_ms,
            secrets: t.secrets,
            durable: t.durable,
            journal_bytes: t.journal_bytes,
            created_at: t.created_at,
            updated_at: t.updated_at,
            paused: t.flow.paused,
            max_running: t.flow.max_running,
            max_running_per_key: t.flow.max_running_per_key,
            rate: t.flow.rate().map(|r| r.to_string()),
            rate_per_key: t.flow.rate_per_key().map(|r| r.to_string()),
            max_snoozes: t.flow.max_snoozes,
        }
    }
}
