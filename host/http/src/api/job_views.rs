//! Request bodies and query parameters of the job endpoints, and their conversion to the
//! store's types (the answers are `sluice_wire::jobs`). Parsing and validation of fields
//! that the store cannot see (the priority label, `delay`, `run_at` vs `delay`) happen
//! here, each error naming its field.
//!
//! Must not: call the store.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use sluice_store::{KeyScope, NewJob, RunAt};
use utoipa::{IntoParams, ToSchema};

use super::error::ApiError;
use super::validate;
use sluice_shared::units::parse_duration;
use sluice_wire::schemas;

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
    /// At most the type's `max_running_per_key` jobs with this key run at once,
    /// fleet-wide, under its `rate_per_key` (docs/flow-control.md).
    #[schema(min_length = 1, max_length = 255)]
    pub concurrency_key: Option<String>,
}

/// Many jobs in one call: all are enqueued or none.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchRequest {
    /// 1 to 1000 jobs.
    #[schema(min_items = 1, max_items = 1000)]
    pub jobs: Vec<EnqueueRequest>,
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
        validate::text_opt(
            &format!("{prefix}concurrency_key"),
            self.concurrency_key.as_deref(),
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
            concurrency_key: self.concurrency_key,
            id: None,
            trace: None,
        })
    }
}

/// Longest `wait` of `GET /v1/jobs/{id}`: a client waits longer by asking again.
pub const MAX_JOB_WAIT: std::time::Duration = std::time::Duration::from_secs(300);

/// The query of `GET /v1/jobs/{id}`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct GetJobParams {
    /// Answer as soon as the job is finished (`completed`, `dead` or `cancelled`), waiting
    /// at most this long (`250ms`, `30s`, `5m`; at most 300 s): woken by the job's finish,
    /// not by polling. At the end of the wait the answer is the job as it is then. Absent
    /// or `0s`: answer at once.
    #[param(example = "30s")]
    pub wait: Option<String>,
}

impl GetJobParams {
    /// The wait asked for (zero when none).
    pub fn wait_for(&self) -> Result<std::time::Duration, ApiError> {
        let Some(text) = self.wait.as_deref() else {
            return Ok(std::time::Duration::ZERO);
        };
        let wait = parse_duration(text)
            .map_err(|e| ApiError::bad_request(format!("invalid wait: {e}")))?;
        if wait > MAX_JOB_WAIT {
            return Err(ApiError::bad_request(format!(
                "invalid wait: {text:?} is over the longest wait, {}s; ask again to wait longer",
                MAX_JOB_WAIT.as_secs()
            )));
        }
        Ok(wait)
    }
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
