//! How a job type looks in JSON ([`JobTypeView`]: `PUT`/`GET /v1/job-types/{type}`,
//! `GET /v1/job-types`, `sluice types set|list|show --json`). Limits are shown as stored,
//! in milliseconds and bytes; null means the host default, capped by the tenant's caps.
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
    #[schema(min_length = 1, max_length = 128)]
    pub name: String,
    #[schema(minimum = 1)]
    pub component_id: i64,
    #[schema(minimum = 1)]
    pub max_attempts: i32,
    #[schema(required = true, minimum = 1)]
    pub timeout_ms: Option<i64>,
    #[schema(required = true, minimum = 1)]
    pub fuel: Option<i64>,
    #[schema(required = true, minimum = 1)]
    pub memory_bytes: Option<i64>,
    #[schema(required = true, minimum = 1)]
    pub output_bytes: Option<i64>,
    #[schema(required = true, minimum = 1)]
    pub log_bytes: Option<i64>,
    #[schema(required = true, minimum = 0)]
    pub backoff_base_ms: Option<i64>,
    #[schema(required = true, minimum = 0)]
    pub backoff_cap_ms: Option<i64>,
    #[schema(required = true, minimum = 0, maximum = 1)]
    pub backoff_jitter: Option<f64>,
    /// Destinations granted for outbound HTTP, normalised (`https://api.example.com:443`).
    pub allow_http: Vec<String>,
    #[schema(required = true, minimum = 0)]
    pub http_max_requests: Option<i32>,
    #[schema(required = true, minimum = 1)]
    pub http_max_request_bytes: Option<i64>,
    #[schema(required = true, minimum = 1)]
    pub http_max_response_bytes: Option<i64>,
    #[schema(required = true, minimum = 1)]
    pub http_connect_timeout_ms: Option<i64>,
    #[schema(required = true, minimum = 1)]
    pub http_first_byte_timeout_ms: Option<i64>,
    #[schema(required = true, minimum = 1)]
    pub http_between_bytes_timeout_ms: Option<i64>,
    /// Names of the tenant's secrets granted to the type.
    pub secrets: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
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
            created_at: t.created_at,
            updated_at: t.updated_at,
        }
    }
}
