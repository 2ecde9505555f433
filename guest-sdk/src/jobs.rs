//! Follow-up jobs: enqueue the next step of a workflow from inside a task
//! (`sluice:task/jobs`, contract `sluice:task@0.2.0`).
//!
//! Each [`enqueue`] is buffered by the host and inserted in the same transaction that
//! records this attempt's success: the jobs exist if and only if the attempt completes.
//! An attempt that returns an error, traps, times out, is cancelled or loses its lease
//! leaves none, so a retried attempt simply asks again. The jobs belong to the job's own
//! tenant, and each records this job as its parent (`sluice jobs show`).
//!
//! A contract 0.3 task uses [`crate::v0_3::jobs`] instead: the same [`Options`] and
//! [`EnqueueError`], but `enqueue` returns the child's id (to await it with
//! [`crate::v0_3::durable::await_jobs`]) and [`Options::concurrency_key`] is carried.
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
/// priority, due now, the job type's attempts, no idempotency or concurrency key). Shared
/// by [`enqueue`] (contract 0.2) and [`crate::v0_3::jobs::enqueue`] (contract 0.3).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    priority: Option<i16>,
    delay_ms: Option<u64>,
    run_at_ms: Option<i64>,
    max_attempts: Option<u32>,
    idempotency_key: Option<String>,
    concurrency_key: Option<String>,
}

impl Options {
    /// Higher runs first: low 0, medium 10 (the default), high 20, critical 30.
    pub fn priority(mut self, priority: i16) -> Self {
        self.priority = Some(priority);
        self
    }

    /// Due this many milliseconds after this attempt's completion (contract 0.3, durable
    /// type: or the suspension that inserts the job) is recorded.
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

    /// Contract 0.3 only: groups jobs of the same tenant and type, so the type's
    /// `--max-running-per-key N` runs at most N jobs with one key at once and its
    /// `--rate-per-key` limits how often they start (docs/flow-control.md). Contract 0.2
    /// cannot carry it: [`enqueue`] refuses options that set it with
    /// [`EnqueueError::Invalid`] rather than drop it; use [`crate::v0_3::jobs::enqueue`].
    pub fn concurrency_key(mut self, key: impl Into<String>) -> Self {
        self.concurrency_key = Some(key.into());
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

enqueue_error_from!(bindings::sluice::task::jobs);

/// `payload` serialized as JSON, for the `enqueue_json` of each contract.
pub(crate) fn json_payload<T: serde::Serialize + ?Sized>(
    payload: &T,
) -> Result<Vec<u8>, EnqueueError> {
    serde_json::to_vec(payload)
        .map_err(|e| EnqueueError::Invalid(format!("cannot serialize the payload: {e}")))
}

/// Buffers one follow-up job of `job_type` with `payload` (JSON by convention).
///
/// Options with a [`Options::concurrency_key`] are refused ([`EnqueueError::Invalid`]):
/// contract 0.2 has no such option.
pub fn enqueue(job_type: &str, payload: &[u8], options: Options) -> Result<(), EnqueueError> {
    if options.concurrency_key.is_some() {
        return Err(EnqueueError::Invalid(
            "concurrency_key needs contract 0.3 (sluice_guest::v0_3::jobs::enqueue)".into(),
        ));
    }
    let options = wit::EnqueueOptions {
        priority: options.priority,
        delay_ms: options.delay_ms,
        run_at_ms: options.run_at_ms,
        max_attempts: options.max_attempts,
        idempotency_key: options.idempotency_key,
    };
    Ok(wit::enqueue(job_type, payload, &options)?)
}

/// [`enqueue`] with `payload` serialized as JSON.
pub fn enqueue_json<T: serde::Serialize + ?Sized>(
    job_type: &str,
    payload: &T,
    options: Options,
) -> Result<(), EnqueueError> {
    enqueue(job_type, &json_payload(payload)?, options)
}

impl From<Options> for crate::v0_3::bindings::sluice::task::jobs::EnqueueOptions {
    fn from(options: Options) -> Self {
        Self {
            priority: options.priority,
            delay_ms: options.delay_ms,
            run_at_ms: options.run_at_ms,
            max_attempts: options.max_attempts,
            idempotency_key: options.idempotency_key,
            concurrency_key: options.concurrency_key,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contract_0_2_refuses_a_concurrency_key_before_calling_the_host() {
        let error = enqueue("t", b"{}", Options::default().concurrency_key("k")).unwrap_err();
        assert!(matches!(&error, EnqueueError::Invalid(m) if m.contains("contract 0.3")));
    }

    #[test]
    fn options_carry_every_field_to_contract_0_3() {
        let wit: crate::v0_3::bindings::sluice::task::jobs::EnqueueOptions = Options::default()
            .priority(20)
            .delay_ms(5)
            .max_attempts(2)
            .idempotency_key("i")
            .concurrency_key("c")
            .into();
        assert_eq!(wit.priority, Some(20));
        assert_eq!(wit.delay_ms, Some(5));
        assert_eq!(wit.run_at_ms, None);
        assert_eq!(wit.max_attempts, Some(2));
        assert_eq!(wit.idempotency_key.as_deref(), Some("i"));
        assert_eq!(wit.concurrency_key.as_deref(), Some("c"));
    }

    #[test]
    fn wit_errors_keep_their_kind_and_message() {
        let e: EnqueueError = wit::EnqueueError::LimitExceeded("10 jobs".into()).into();
        assert_eq!(e, EnqueueError::LimitExceeded("10 jobs".into()));
        let task: TaskError = EnqueueError::UnknownJobType("nope".into()).into();
        assert_eq!(task, TaskError::fatal("unknown job type `nope`"));
    }
}
