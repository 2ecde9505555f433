//! How jobs look in JSON: a job with its payload and output ([`JobView`], `GET
//! /v1/jobs/{id}` and `sluice jobs show --json`), a job as listed ([`JobListItem`]), its
//! attempts ([`AttemptView`]) and what an attempt logged ([`AttemptLogView`]), and the
//! answer of an enqueue ([`BatchItem`]). Payloads and outputs are shown as JSON when they
//! are JSON, else as text; states and outcomes by their wire names.
//!
//! Owns: these shapes and their conversions from `sluice_store`'s rows. Must not: read or
//! write anything.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sluice_store::{AttemptLogRecord, AttemptRecord, Enqueued, JobRecord, JobSummary};
use utoipa::ToSchema;

use super::schemas;

/// One enqueued job: its id, and whether this call created it. An item of a batch's
/// answer (in request order), and what `sluice enqueue --json` prints.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchItem {
    /// The job's id: the new job's, or the one that holds the idempotency key.
    #[schema(minimum = 1)]
    pub id: i64,
    /// False when the idempotency key was taken: `id` is the job holding it.
    pub created: bool,
}

/// The results of a batch, in request order.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchResponse {
    /// One item per job asked for, in request order.
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

/// Bytes shown as JSON when they are JSON, else as a string (lossy UTF-8).
pub fn bytes_as_json(bytes: &[u8]) -> serde_json::Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|_| serde_json::Value::String(String::from_utf8_lossy(bytes).into_owned()))
}

/// A job with its payload and output.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JobView {
    /// The job's id, unique across tenants, in creation order.
    #[schema(minimum = 1)]
    pub id: i64,
    /// The tenant that owns the job.
    pub tenant: String,
    /// The job type it runs as (sent as `type`): the component and limits at claim time.
    #[serde(rename = "type")]
    #[schema(min_length = 1, max_length = 128)]
    pub job_type: String,
    /// The job's state: `pending`, `running`, `waiting`, `completed`, `dead` or
    /// `cancelled` (docs/state-machine.md).
    #[schema(schema_with = schemas::job_state)]
    pub state: String,
    /// Claim order within the tenant: higher first, then earlier `run_at`, then lower id.
    #[schema(minimum = -32768, maximum = 32767)]
    pub priority: i32,
    /// When the job is due: it may be claimed from then on (a retry's backoff moves it
    /// later; a waiting job wakes then).
    pub run_at: DateTime<Utc>,
    /// Number of the attempt running or last run (0 before the first).
    #[schema(minimum = 0)]
    pub attempt: i32,
    /// The attempts it may use; it dies when a failed attempt was the last.
    #[schema(minimum = 1)]
    pub max_attempts: i32,
    /// The idempotency key it was enqueued with (unique per tenant while held); null if
    /// none.
    #[schema(required = true, min_length = 1, max_length = 255)]
    pub idempotency_key: Option<String>,
    /// How long the key stays taken: `retained` (while the job exists) or `unfinished`
    /// (while it is pending or running).
    #[schema(schema_with = schemas::key_scope)]
    pub key_scope: String,
    /// A running job asked to stop.
    pub cancel_requested: bool,
    /// The error of its last failed, expired or cancelled attempt, kept after a later
    /// completion; null if none.
    #[schema(required = true)]
    pub last_error: Option<String>,
    /// The payload: JSON when it is JSON, else its text.
    #[schema(schema_with = schemas::any_json)]
    pub payload: serde_json::Value,
    /// The output of a completed job: JSON when it is JSON, else its text; null before.
    #[schema(schema_with = schemas::any_json, required = true)]
    pub output: Option<serde_json::Value>,
    /// When it was enqueued (the database's clock).
    pub created_at: DateTime<Utc>,
    /// When its row last changed: a claim, a heartbeat, the end of an attempt, a cancel or
    /// a retry.
    pub updated_at: DateTime<Utc>,
    /// When it completed, died or was cancelled; null while pending or running.
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
    /// Its concurrency key (docs/flow-control.md); null if none.
    #[schema(required = true, min_length = 1, max_length = 255)]
    pub concurrency_key: Option<String>,
    /// Why a pending job that is due does not run: `type paused`, `tenant paused`,
    /// `type at its cap (3/3 running)`, `waiting for key K (1/1 running)`, `rate limited
    /// until …`, `key K rate limited until …`; null when nothing holds it back.
    #[schema(required = true, example = "waiting for key acct-7 (1/1 running)")]
    pub held: Option<String>,
    /// A waiting durable job (docs/durable.md) awaits the signal of this name; null
    /// otherwise. (A waiting job's wake-up instant, or its await's deadline, is `run_at`.)
    #[schema(required = true, min_length = 1, max_length = 128)]
    pub waiting_for: Option<String>,
    /// A waiting durable job awaits these jobs (its follow-ups) to finish; null otherwise.
    #[schema(required = true)]
    pub awaited: Option<Vec<i64>>,
    /// How many times its runs snoozed (`flow.snooze`).
    #[schema(minimum = 0)]
    pub snoozes: i32,
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
            concurrency_key: j.concurrency_key,
            held: j.held.map(|h| h.to_string()),
            waiting_for: j.waiting_for,
            awaited: j.awaited,
            snoozes: j.snoozes,
        }
    }
}

/// A job as listed: no payload or output, their sizes instead.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JobListItem {
    /// The job's id.
    #[schema(minimum = 1)]
    pub id: i64,
    /// The job type it runs as (sent as `type`).
    #[serde(rename = "type")]
    #[schema(min_length = 1, max_length = 128)]
    pub job_type: String,
    /// The job's state: `pending`, `running`, `completed`, `dead` or `cancelled`
    /// (docs/state-machine.md).
    #[schema(schema_with = schemas::job_state)]
    pub state: String,
    /// Claim order within the tenant: higher first, then earlier `run_at`, then lower id.
    #[schema(minimum = -32768, maximum = 32767)]
    pub priority: i32,
    /// When the job is due: it may be claimed from then on (a retry's backoff moves it
    /// later).
    pub run_at: DateTime<Utc>,
    /// Number of the attempt running or last run (0 before the first).
    #[schema(minimum = 0)]
    pub attempt: i32,
    /// The attempts it may use; it dies when a failed attempt was the last.
    #[schema(minimum = 1)]
    pub max_attempts: i32,
    /// The idempotency key it was enqueued with (unique per tenant while held); null if
    /// none.
    #[schema(required = true, min_length = 1, max_length = 255)]
    pub idempotency_key: Option<String>,
    /// The error of its last failed, expired or cancelled attempt, kept after a later
    /// completion; null if none.
    #[schema(required = true)]
    pub last_error: Option<String>,
    /// Bytes of the payload.
    #[schema(minimum = 0)]
    pub payload_size: i32,
    /// Bytes of the output (null before the job completes).
    #[schema(required = true, minimum = 0)]
    pub output_size: Option<i32>,
    /// When it was enqueued.
    pub created_at: DateTime<Utc>,
    /// When it completed, died or was cancelled; null while pending or running.
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
    /// At most the page's `limit` jobs, newest (highest id) first.
    pub jobs: Vec<JobListItem>,
    /// Pass as `cursor` for the next page; null on the last page.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

/// One attempt of a job (`GET /v1/jobs/{id}/attempts`, `sluice jobs attempts ID`).
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AttemptView {
    /// The attempt number (it starts again at 1 after a retry of a dead or cancelled
    /// job; both runs are listed, oldest first).
    #[schema(minimum = 1)]
    pub attempt: i32,
    /// The id of the worker that ran it.
    pub worker: String,
    /// When the attempt was claimed.
    pub started_at: DateTime<Utc>,
    /// Null while it runs.
    #[schema(required = true)]
    pub finished_at: Option<DateTime<Utc>>,
    /// How the attempt ended; null while it runs.
    #[schema(schema_with = schemas::attempt_outcome, required = true)]
    pub outcome: Option<String>,
    /// Why it failed (null when it did not).
    #[schema(required = true)]
    pub error: Option<String>,
    /// Fuel the attempt burned (null while it runs, or when not recorded).
    #[schema(required = true, minimum = 0)]
    pub fuel_used: Option<i64>,
}

impl From<AttemptRecord> for AttemptView {
    fn from(a: AttemptRecord) -> Self {
        AttemptView {
            attempt: a.attempt,
            worker: a.worker,
            started_at: a.started_at,
            finished_at: a.finished_at,
            outcome: a.outcome.map(|o| o.as_str().to_owned()),
            error: a.error,
            fuel_used: a.fuel_used,
        }
    }
}

/// The log of one attempt: host `log` lines (`[INFO] message`), then the guest's stdout
/// and stderr (`[stdout] text`), as captured and masked by the sandbox, cut at the
/// attempt's log cap.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AttemptLogView {
    /// The job the attempt belongs to.
    #[schema(minimum = 1)]
    pub job_id: i64,
    /// The attempt number (it starts again at 1 after `POST /v1/jobs/{id}/retry`; the
    /// newest run of that number is shown).
    #[schema(minimum = 1)]
    pub attempt: i32,
    /// When the attempt was claimed.
    pub started_at: DateTime<Utc>,
    /// When it ended; null while it runs.
    #[schema(required = true)]
    pub finished_at: Option<DateTime<Utc>>,
    /// How the attempt ended; null while it runs.
    #[schema(schema_with = schemas::attempt_outcome, required = true)]
    pub outcome: Option<String>,
    /// The kept log text (invalid UTF-8 replaced); empty when the attempt logged nothing.
    pub log: String,
    /// Bytes dropped at the cap after `log` (shown as `… 12,345 bytes dropped`).
    #[schema(minimum = 0)]
    pub dropped_bytes: i64,
    /// True when bytes were dropped.
    pub truncated: bool,
}

impl AttemptLogView {
    /// The log of one attempt of job `job_id`.
    pub fn new(job_id: i64, record: &AttemptLogRecord) -> Self {
        AttemptLogView {
            job_id,
            attempt: record.attempt,
            started_at: record.started_at,
            finished_at: record.finished_at,
            outcome: record.outcome.map(|o| o.as_str().to_owned()),
            log: String::from_utf8_lossy(record.log.as_deref().unwrap_or_default()).into_owned(),
            dropped_bytes: record.dropped_bytes,
            truncated: record.dropped_bytes > 0,
        }
    }
}

/// What `sluice enqueue --bulk FILE --json` prints.
#[derive(Debug, Serialize)]
pub struct BulkEnqueued {
    /// Jobs created (a line whose idempotency key was taken creates none).
    pub enqueued: usize,
    /// Lines read (blank lines are skipped).
    pub lines: usize,
}

/// What `sluice jobs logs ID --json` prints: the logs of a job's attempts, oldest first.
#[derive(Debug, Serialize)]
pub struct JobLogs {
    /// The job whose logs these are.
    pub job_id: i64,
    /// One log per attempt that stored one, oldest first (an attempt that logged nothing,
    /// or was released, has none).
    pub attempts: Vec<AttemptLogView>,
}

/// What a waiting job waits for, in words (`sluice jobs show`, the dashboard's job page):
/// a signal (and until when), jobs, or a time (its `run_at`); `None` unless `waiting`.
pub fn waiting_text(job: &JobRecord) -> Option<String> {
    if job.state != sluice_store::JobState::Waiting {
        return None;
    }
    let until = if job.run_at.timestamp() >= 253_402_300_000 - 1 {
        String::new()
    } else {
        format!(" (until {})", job.run_at.to_rfc3339())
    };
    Some(match (&job.waiting_for, &job.awaited) {
        (Some(name), _) => format!("signal `{name}`{until}"),
        (None, Some(ids)) => {
            let ids: Vec<String> = ids.iter().map(i64::to_string).collect();
            format!("jobs {}", ids.join(", "))
        }
        (None, None) => format!("the time {}", job.run_at.to_rfc3339()),
    })
}
