//! Request and response bodies of the job endpoints, and their conversion to and from
//! the store's types. Parsing and validation of fields that the store cannot see (the
//! priority label, `delay`, `run_at` vs `delay`) happen here, each error naming its field.
//!
//! Must not: call the store.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sluice_store::{Enqueued, JobRecord, JobSummary, KeyScope, NewJob, RunAt};
use utoipa::{IntoParams, ToSchema};

use super::error::ApiError;
use super::schemas;
use super::validate;
use crate::units::parse_duration;

/// A job to enqueue.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EnqueueRequest {
    /// The job type (registered with `PUT /v1/job-types/{type}`).
    #[serde(rename = "type")]
    #[schema(min_length = 1, max_length = 128)]
    pub job_type: String,
    /// Any JSON value; the component receives its JSON text. Default (and null) `{}`.
    #[serde(default)]
    #[schema(schema_with = schemas::any_json)]
    pub payload: Option<serde_json::Value>,
    #[serde(default)]
    #[schema(schema_with = schemas::priority_request)]
    pub priority: Option<serde_json::Value>,
    /// Run no earlier than this instant (RFC 3339, 1970 to 9999). Not with `delay`.
    pub run_at: Option<DateTime<Utc>>,
    /// Run no earlier than this long from now, at most 100 years: one term, `250ms`,
    /// `30s`, `5m`, `2h` or `7d` (a bare number is seconds; the server also reads sums
    /// such as `1h 30m`). Not with `run_at`.
    #[schema(examples("30s"))]
    pub delay: Option<String>,
    /// Attempts before the job is dead (default: the job type's); 1 means never retried.
    #[serde(default, deserialize_with = "super::whole::option")]
    #[schema(minimum = 1)]
    pub max_attempts: Option<i32>,
    /// A duplicate key (per tenant) returns the existing job with 200 and creates nothing.
    #[schema(min_length = 1, max_length = 255)]
    pub idempotency_key: Option<String>,
    #[schema(schema_with = schemas::key_scope_request)]
    pub key_scope: Option<KeyScope>,
}

/// Many jobs in one call: all are enqueued or none.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchRequest {
    /// 1 to 1000 jobs.
    #[schema(min_items = 1, max_items = 1000)]
    pub jobs: Vec<EnqueueRequest>,
}

/// One result of a batch, in request order.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchItem {
    #[schema(minimum = 1)]
    pub id: i64,
    /// False when the idempotency key was taken: `id` is the job holding it.
    pub created: bool,
}

/// The results of a batch, in request order.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchResponse {
    pub jobs: Vec<BatchItem>,
}

impl From<Enqueued> for BatchItem {
    fn from(e: Enqueued) -> Self {
        BatchItem {
            id: e.id,
            created: e.created,
        }
    }
}

pub(super) fn parse_priority(
    value: Option<&serde_json::Value>,
    field: &str,
) -> Result<i32, ApiError> {
    let bad = |shown: &dyn std::fmt::Display| {
        ApiError::bad_request(format!(
            "invalid {field}: {shown} is not a priority; use low, medium, high, critical or an integer"
        ))
    };
    match value {
        None | Some(serde_json::Value::Null) => Ok(sluice_store::priority::MEDIUM),
        Some(serde_json::Value::Number(n)) => {
            super::whole::of_number::<i32>(n).ok_or_else(|| bad(n))
        }
        Some(serde_json::Value::String(s)) => {
            sluice_store::priority::from_label(s).ok_or_else(|| bad(&format!("{s:?}")))
        }
        Some(other) => Err(bad(other)),
    }
}

impl EnqueueRequest {
    /// The store's job for `tenant`; `prefix` names the request element in errors
    /// (`jobs[3].`).
    pub fn into_new_job(self, tenant: &str, prefix: &str) -> Result<NewJob, ApiError> {
        validate::text(&format!("{prefix}type"), &self.job_type)?;
        validate::text_opt(
            &format!("{prefix}idempotency_key"),
            self.idempotency_key.as_deref(),
        )?;
        let priority = parse_priority(self.priority.as_ref(), &format!("{prefix}priority"))?;
        let run_at = match (self.run_at, self.delay) {
            (Some(_), Some(_)) => {
                return Err(ApiError::bad_request(format!(
                    "invalid {prefix}delay: give either run_at or delay, not both"
                )));
            }
            (Some(at), None) => {
                validate::run_at(&format!("{prefix}run_at"), at)?;
                RunAt::At(at)
            }
            (None, Some(delay)) => {
                let delay = parse_duration(&delay)
                    .map_err(|e| ApiError::bad_request(format!("invalid {prefix}delay: {e}")))?;
                validate::delay(&format!("{prefix}delay"), delay)?;
                RunAt::Delay(delay)
            }
            (None, None) => RunAt::Now,
        };
        if self.key_scope.is_some() && self.idempotency_key.is_none() {
            return Err(ApiError::bad_request(format!(
                "invalid {prefix}key_scope: it only applies with an idempotency_key"
            )));
        }
        let payload = self
            .payload
            .unwrap_or_else(|| serde_json::json!({}))
            .to_string()
            .into_bytes();
        Ok(NewJob {
            tenant: tenant.to_owned(),
            job_type: self.job_type,
            payload,
            priority,
            run_at,
            max_attempts: self.max_attempts,
            idempotency_key: self.idempotency_key,
            key_scope: self.key_scope.unwrap_or_default(),
            parent: None,
        })
    }
}

/// Bytes shown as JSON when they are JSON, else as a string (lossy UTF-8).
fn bytes_as_json(bytes: &[u8]) -> serde_json::Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|_| serde_json::Value::String(String::from_utf8_lossy(bytes).into_owned()))
}

/// A job with its payload and output.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JobView {
    #[schema(minimum = 1)]
    pub id: i64,
    pub tenant: String,
    #[serde(rename = "type")]
    #[schema(min_length = 1, max_length = 128)]
    pub job_type: String,
    #[schema(schema_with = schemas::job_state)]
    pub state: String,
    #[schema(minimum = -32768, maximum = 32767)]
    pub priority: i32,
    pub run_at: DateTime<Utc>,
    /// Number of the attempt running or last run (0 before the first).
    #[schema(minimum = 0)]
    pub attempt: i32,
    #[schema(minimum = 1)]
    pub max_attempts: i32,
    #[schema(required = true, min_length = 1, max_length = 255)]
    pub idempotency_key: Option<String>,
    #[schema(schema_with = schemas::key_scope)]
    pub key_scope: String,
    /// A running job asked to stop.
    pub cancel_requested: bool,
    #[schema(required = true)]
    pub last_error: Option<String>,
    /// The payload: JSON when it is JSON, else its text.
    #[schema(schema_with = schemas::any_json)]
    pub payload: serde_json::Value,
    /// The output of a completed job: JSON when it is JSON, else its text; null before.
    #[schema(schema_with = schemas::any_json, required = true)]
    pub output: Option<serde_json::Value>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[schema(required = true)]
    pub finished_at: Option<DateTime<Utc>>,
    /// The job whose successful attempt enqueued this one (a follow-up job); null if none.
    #[schema(required = true, minimum = 1)]
    pub parent_id: Option<i64>,
    /// Its follow-up jobs, in the order its attempt asked for them: the first 100 ids
    /// (`GET /v1/jobs?parent=ID` lists them all).
    #[schema(max_items = 100)]
    pub children: Vec<i64>,
    /// How many follow-up jobs it has.
    #[schema(minimum = 0)]
    pub children_count: i64,
}

impl From<JobRecord> for JobView {
    fn from(j: JobRecord) -> Self {
        JobView {
            id: j.id,
            tenant: j.tenant,
            job_type: j.job_type,
            state: j.state.as_str().to_owned(),
            priority: j.priority,
            run_at: j.run_at,
            attempt: j.attempt,
            max_attempts: j.max_attempts,
            idempotency_key: j.idempotency_key,
            key_scope: j.key_scope.as_str().to_owned(),
            cancel_requested: j.cancel_requested,
            last_error: j.last_error,
            payload: bytes_as_json(&j.payload),
            output: j.output.as_deref().map(bytes_as_json),
            created_at: j.created_at,
            updated_at: j.updated_at,
            finished_at: j.finished_at,
            parent_id: j.parent_id,
            children: j.children,
            children_count: j.children_count,
        }
    }
}

/// A job as listed: no payload or output, their sizes instead.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JobListItem {
    #[schema(minimum = 1)]
    pub id: i64,
    #[serde(rename = "type")]
    #[schema(min_length = 1, max_length = 128)]
    pub job_type: String,
    #[schema(schema_with = schemas::job_state)]
    pub state: String,
    #[schema(minimum = -32768, maximum = 32767)]
    pub priority: i32,
    pub run_at: DateTime<Utc>,
    #[schema(minimum = 0)]
    pub attempt: i32,
    #[schema(minimum = 1)]
    pub max_attempts: i32,
    #[schema(required = true, min_length = 1, max_length = 255)]
    pub idempotency_key: Option<String>,
    #[schema(required = true)]
    pub last_error: Option<String>,
    /// Bytes of the payload.
    #[schema(minimum = 0)]
    pub payload_size: i32,
    /// Bytes of the output (null before the job completes).
    #[schema(required = true, minimum = 0)]
    pub output_size: Option<i32>,
    pub created_at: DateTime<Utc>,
    #[schema(required = true)]
    pub finished_at: Option<DateTime<Utc>>,
    /// The job that enqueued this one as a follow-up; null if none.
    #[schema(required = true, minimum = 1)]
    pub parent_id: Option<i64>,
}

impl From<JobSummary> for JobListItem {
    fn from(j: JobSummary) -> Self {
        JobListItem {
            id: j.id,
            job_type: j.job_type,
            state: j.state.as_str().to_owned(),
            priority: j.priority,
            run_at: j.run_at,
            attempt: j.attempt,
            max_attempts: j.max_attempts,
            idempotency_key: j.idempotency_key,
            last_error: j.last_error,
            payload_size: j.payload_size,
            output_size: j.output_size,
            created_at: j.created_at,
            finished_at: j.finished_at,
            parent_id: j.parent_id,
        }
    }
}

/// One page of jobs, newest first.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JobPage {
    pub jobs: Vec<JobListItem>,
    /// Pass as `cursor` for the next page; null on the last page.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

/// Filters and paging of `GET /v1/jobs`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    #[param(schema_with = schemas::job_state_filter)]
    pub state: Option<String>,
    /// Only jobs of this type.
    #[serde(rename = "type")]
    pub job_type: Option<String>,
    /// Only the follow-up jobs of this job.
    pub parent: Option<i64>,
    /// `next_cursor` of the previous page (anything else is a 400).
    pub cursor: Option<String>,
    /// Jobs per page, 1 to 1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
}
