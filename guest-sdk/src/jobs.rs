//! Follow-up jobs: enqueue the next step of a workflow from inside a task
//! (`sluice:task/jobs`, contract `sluice:task@0.2.0`).
//!
//! Each [`enqueue`] is buffered by the host and inserted in the same transaction that
//! records this attempt's success: the jobs exist if and only if the attempt completes.
//! An attempt that returns an error, traps, times out, is cancelled or loses its lease
//! leaves none, so a retried attempt simply asks again. The jobs belong to the job's own
//! tenant, and each records this job as its parent (`sluice jobs show`).
//!
//! ```no_run
//! use sluice_guest::jobs::{self, Options};
//! use sluice_guest::{Job, TaskResult};
//!
//! fn run(job: Job) -> TaskResult {
//!     // Charge, then send the receipt: the receipt job exists only if this completes.
//!     jobs::enqueue("send-receipt", br#"{"order": 42}"#, Options::default())?;
//!     jobs::enqueue_json(
//!         "audit",
//!         &sluice_guest::serde_json::json!({ "order": 42 }),
//!         Options::default().delay_ms(60_000),
//!     )?;
//!     Ok(job.payload)
//! }
//! sluice_guest::export_task!(run);
//! ```

use crate::bindings::sluice::task::jobs as wit;
use crate::error::TaskError;

/// Optional settings of a follow-up job; the defaults are those of any enqueue (medium
/// priority, due now, the job type's attempts, no idempotency key).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    priority: Option<i16>,
    delay_ms: Option<u64>,
    run_at_ms: Option<i64>,
    max_attempts: Option<u32>,
    idempotency_key: Option<String>,
}

impl Options {
    /// Higher runs first: low 0, medium 10 (the default), high 20, critical 30.
    pub fn priority(mut self, priority: i16) -> Self {
        self.priority = Some(priority);
        self
    }

    /// Due this many milliseconds after this attempt's completion is recorded.
    pub fn delay_ms(mut self, ms: u64) -> Self {
        self.delay_ms = Some(ms);
        self
    }

    /// Due at this instant, in milliseconds since the Unix epoch (UTC). Not with
    /// [`Options::delay_ms`].
    pub fn run_at_ms(mut self, ms: i64) -> Self {
        self.run_at_ms = Some(ms);
        self
    }

    /// Attempts before the job is dead (at least 1; 1 means never retried).
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = Some(attempts);
        self
    }

    /// Unique per tenant, like any enqueue's key: a second job with the same key is not
    /// created.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }
}

/// Why a follow-up job was refused; nothing was buffered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnqueueError {
    /// The tenant has no job type of this name.
    UnknownJobType(String),
    /// An option or the payload is invalid; the message names it.
    Invalid(String),
    /// This attempt reached its cap on follow-up jobs or on their payload bytes.
    LimitExceeded(String),
}

impl std::fmt::Display for EnqueueError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EnqueueError::UnknownJobType(name) => write!(f, "unknown job type `{name}`"),
            EnqueueError::Invalid(message) => write!(f, "invalid follow-up job: {message}"),
            EnqueueError::LimitExceeded(message) => {
                write!(f, "follow-up job limit exceeded: {message}")
            }
        }
    }
}

impl std::error::Error for EnqueueError {}

/// `?` in a task: a refused follow-up fails the attempt. An unknown type or an invalid
/// job will not change on retry, so they are fatal; a cap is too (the same attempt
/// would ask for as many again).
impl From<EnqueueError> for TaskError {
    fn from(error: EnqueueError) -> Self {
        TaskError::fatal(error.to_string())
    }
}

/// Buffers one follow-up job of `job_type` with `payload` (JSON by convention).
pub fn enqueue(job_type: &str, payload: &[u8], options: Options) -> Result<(), EnqueueError> {
    let options = wit::EnqueueOptions {
        priority: options.priority,
        delay_ms: options.delay_ms,
        run_at_ms: options.run_at_ms,
        max_attempts: options.max_attempts,
        idempotency_key: options.idempotency_key,
    };
    wit::enqueue(job_type, payload, &options).map_err(|error| match error {
        wit::EnqueueError::UnknownJobType(name) => EnqueueError::UnknownJobType(name),
        wit::EnqueueError::Invalid(message) => EnqueueError::Invalid(message),
        wit::EnqueueError::LimitExceeded(message) => EnqueueError::LimitExceeded(message),
    })
}

/// [`enqueue`] with `payload` serialized as JSON.
pub fn enqueue_json<T: serde::Serialize + ?Sized>(
    job_type: &str,
    payload: &T,
    options: Options,
) -> Result<(), EnqueueError> {
    let bytes = serde_json::to_vec(payload)
        .map_err(|e| EnqueueError::Invalid(format!("cannot serialize the payload: {e}")))?;
    enqueue(job_type, &bytes, options)
}
