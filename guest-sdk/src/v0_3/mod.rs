//! Contract `sluice:task@0.3.0` (`wit/v0.3/`): everything of 0.2 plus durable waits
//! ([`durable`]), snoozing ([`flow`]) and follow-up jobs that return their id ([`jobs`]).
//!
//! A task opts in by exporting its function with [`crate::export_task_v0_3!`] and calling
//! the modules below instead of their 0.2 namesakes ([`log`], [`secrets`], [`jobs`],
//! [`cancelled`]). The function keeps its signature, `fn(Job) -> TaskResult`, and
//! [`crate::Job`], [`crate::TaskError`], [`crate::json_output`] and [`crate::http`] are
//! shared with 0.2. A component is a 0.3 one when it imports a `sluice:task/*@0.3.0`
//! interface; mixing in 0.2 calls (`sluice_guest::log::info`) still works on a host that
//! runs 0.3, but imports both versions, so stay with this module's items.
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use sluice_guest::v0_3::{durable, jobs, log};
//! use sluice_guest::{Job, TaskResult};
//!
//! fn run(job: Job) -> TaskResult {
//!     let child = jobs::enqueue("resize", &job.payload, jobs::Options::default())?;
//!     durable::sleep(Duration::from_secs(60)); // suspends a durable type, holds no slot
//!     let outcomes = durable::await_jobs(&[child])?; // not durable: a fatal error
//!     log::info(format!("child {child} ended {}", outcomes[0].state));
//!     sluice_guest::json_output(&outcomes[0].text())
//! }
//!
//! sluice_guest::export_task_v0_3!(run);
//! ```
//!
//! **Durable or not.** The same component behaves differently in a durable job type
//! (`sluice types set T --durable`) and in one that is not: see each function. In a
//! durable type a run may be suspended inside a call of [`durable`] or [`flow`] and a
//! later run replays every host call up to that point from the journal, so code before a
//! wait runs again (with the same results from the host) and must not depend on anything
//! else: no state outside the host's answers.

pub mod durable;
pub mod flow;
pub mod jobs;

#[doc(hidden)]
pub mod bindings;

world_conversions!(v0_3::bindings);

/// Structured logging to the attempt's log (`sluice:task/host@0.3.0`); as [`crate::log`].
///
/// Lines beyond the host's per-attempt cap are dropped, never an error. In a durable type
/// a replayed run logs its lines again (the host may drop or mark them).
pub mod log {
    log_functions!(v0_3::bindings::sluice::task::host);
}

/// The tenant's secrets (`sluice:task/secrets@0.3.0`); as [`crate::secrets`], with the
/// same [`SecretError`](crate::secrets::SecretError) (fatal with `?`) and masking.
pub mod secrets {
    pub use crate::secrets::SecretError;

    secrets_get!(v0_3::bindings::sluice::task::secrets);
}

/// True once an operator has cancelled this job or the host is shutting down
/// (`sluice:task/host@0.3.0`); as [`crate::cancelled`].
pub fn cancelled() -> bool {
    bindings::sluice::task::host::cancelled()
}

/// Export a contract 0.3 task function `fn(Job) -> TaskResult` as this component's `run`.
///
/// The same function as for [`crate::export_task!`]; use one of the two, once, at the top
/// level of a `cdylib` crate, and call [`crate::v0_3`]'s modules:
///
/// ```no_run
/// fn run(job: sluice_guest::Job) -> sluice_guest::TaskResult {
///     sluice_guest::v0_3::flow::snooze(std::time::Duration::from_secs(1));
///     Ok(job.payload)
/// }
/// sluice_guest::export_task_v0_3!(run);
/// ```
#[macro_export]
macro_rules! export_task_v0_3 {
    ($run:path) => {
        $crate::__export_task!([v0_3::bindings] __sluice_export_world_v0_3, $run);
    };
}

/// `duration` in whole milliseconds, rounded up (a wait is never shorter than asked),
/// saturating at `u64::MAX`.
pub(crate) fn millis(duration: std::time::Duration) -> u64 {
    let ms = duration.as_millis() + u128::from(!duration.subsec_nanos().is_multiple_of(1_000_000));
    u64::try_from(ms).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn millis_round_up_and_saturate() {
        assert_eq!(millis(Duration::ZERO), 0);
        assert_eq!(millis(Duration::from_micros(1)), 1);
        assert_eq!(millis(Duration::from_millis(1500)), 1500);
        assert_eq!(millis(Duration::from_nanos(1_500_000)), 2);
        assert_eq!(millis(Duration::MAX), u64::MAX);
    }

    #[test]
    fn world_types_convert_like_0_2() {
        let job: crate::Job = bindings::Job {
            id: 9,
            job_type: "t".into(),
            tenant: "acme".into(),
            attempt: 2,
            max_attempts: 5,
            payload: b"{}".to_vec(),
        }
        .into();
        assert_eq!(
            (job.id, job.attempt, job.payload.as_slice()),
            (9, 2, &b"{}"[..])
        );
        let out: Result<Vec<u8>, bindings::TaskError> =
            crate::__run(job, |_| Err(crate::TaskError::fatal("no")));
        assert!(matches!(out, Err(bindings::TaskError::Fatal(m)) if m == "no"));
    }
}
