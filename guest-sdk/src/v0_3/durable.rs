//! Waiting without holding a slot (`sluice:task/durable@0.3.0`, docs/durable.md).
//!
//! In a durable job type (`sluice types set T --durable`) a call below may suspend the
//! run: the job goes to `waiting`, holds no slot, and the run after the wake-up replays
//! the journal up to the call, which then returns. To the task each is a plain blocking
//! call. In a type that is not durable [`sleep`] sleeps in place (within the attempt's
//! timeout) and the awaits return [`WaitError::NotDurable`] at once; with `?` that fails
//! the job (fatal, see [`WaitError`]).
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use sluice_guest::v0_3::{durable, jobs};
//! use sluice_guest::{Job, TaskError, TaskResult};
//!
//! fn run(job: Job) -> TaskResult {
//!     // Wait up to a day for a human's approval, then fan out and fan in.
//!     let approval: Option<sluice_guest::serde_json::Value> =
//!         durable::await_signal_json("approved", Some(Duration::from_secs(86_400)))?;
//!     if approval.is_none() {
//!         return Err(TaskError::fatal("not approved within a day"));
//!     }
//!     let ids = [
//!         jobs::enqueue("resize", b"{\"size\": 64}", jobs::Options::default())?,
//!         jobs::enqueue("resize", b"{\"size\": 512}", jobs::Options::default())?,
//!     ];
//!     let outcomes = durable::await_jobs(&ids)?;
//!     let done = outcomes.iter().filter(|o| o.is_completed()).count();
//!     sluice_guest::json_output(&done)
//! }
//! sluice_guest::export_task_v0_3!(run);
//! ```

use std::fmt;
use std::time::Duration;

use serde::de::DeserializeOwned;

use super::bindings::sluice::task::durable as wit;
use crate::TaskError;

/// Why a wait was refused. The run goes on; nothing was recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WaitError {
    /// The job type is not durable, so the task cannot wait without holding a slot
    /// (`sluice types set T --durable`).
    NotDurable,
    /// An argument is invalid (a signal name empty or too long, an id that is not a
    /// follow-up job of this job, an id listed twice); the message names it.
    Invalid(String),
}

impl fmt::Display for WaitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitError::NotDurable => f.write_str(
                "not-durable: this job type cannot wait without holding a slot \
                 (make it durable: `sluice types set TYPE --durable`)",
            ),
            WaitError::Invalid(message) => write!(f, "invalid wait: {message}"),
        }
    }
}

impl std::error::Error for WaitError {}

/// `?` in a task: a refused wait is [`TaskError::Fatal`]. Neither kind gets better by
/// retrying: `not-durable` is the job type's configuration (an operator makes the type
/// durable, then retries the dead job), `invalid` is a bug in the task. Match on the
/// error instead to fall back (for example to polling) where that makes sense.
impl From<WaitError> for TaskError {
    fn from(e: WaitError) -> Self {
        TaskError::fatal(e.to_string())
    }
}

impl From<wit::WaitError> for WaitError {
    fn from(e: wit::WaitError) -> Self {
        match e {
            wit::WaitError::NotDurable => WaitError::NotDurable,
            wit::WaitError::Invalid(message) => WaitError::Invalid(message),
        }
    }
}

/// How an awaited follow-up job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChildState {
    /// Its last attempt returned `Ok`.
    Completed,
    /// It failed for good (attempts used up, a fatal error, or the reaper).
    Dead,
    /// An operator cancelled it.
    Cancelled,
}

impl fmt::Display for ChildState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ChildState::Completed => "completed",
            ChildState::Dead => "dead",
            ChildState::Cancelled => "cancelled",
        })
    }
}

/// The final state of one awaited follow-up job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildOutcome {
    /// The id [`crate::v0_3::jobs::enqueue`] returned for it.
    pub id: u64,
    /// How it ended.
    pub state: ChildState,
    /// Its output bytes when [`ChildState::Completed`] (possibly empty); `None` otherwise.
    pub output: Option<Vec<u8>>,
    /// Its last error when [`ChildState::Dead`] (and [`ChildState::Cancelled`], if it had
    /// one); `None` when completed.
    pub error: Option<String>,
}

impl ChildOutcome {
    /// True when the child completed.
    pub fn is_completed(&self) -> bool {
        self.state == ChildState::Completed
    }

    /// The output as text (invalid UTF-8 replaced); `None` unless completed.
    pub fn text(&self) -> Option<String> {
        self.output
            .as_deref()
            .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
    }

    /// The output decoded from JSON. A child that did not complete, or whose output is
    /// not JSON for `T`, is [`TaskError::Fatal`] naming the child (and its error).
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, TaskError> {
        let Some(output) = &self.output else {
            return Err(TaskError::fatal(format!(
                "job {} ended {}{}: it has no output",
                self.id,
                self.state,
                self.error
                    .as_deref()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default()
            )));
        };
        serde_json::from_slice(output).map_err(|e| {
            TaskError::fatal(format!(
                "job {}: output is not the JSON expected: {e}",
                self.id
            ))
        })
    }
}

impl From<wit::ChildOutcome> for ChildOutcome {
    fn from(o: wit::ChildOutcome) -> Self {
        ChildOutcome {
            id: o.id,
            state: match o.state {
                wit::ChildState::Completed => ChildState::Completed,
                wit::ChildState::Dead => ChildState::Dead,
                wit::ChildState::Cancelled => ChildState::Cancelled,
            },
            output: o.output,
            error: o.error,
        }
    }
}

/// Returns after `duration` (whole milliseconds, rounded up).
///
/// - **Durable type:** the wake-up instant is fixed (and journaled) by the first call. A
///   short sleep that ends before the attempt's deadline sleeps in place; a longer one
///   suspends the run until that instant; a replayed sleep whose instant has passed
///   returns at once.
/// - **Not durable:** sleeps in place. A sleep that would outlast the attempt's remaining
///   time fails the attempt at once (retryable, like a timeout) and never returns.
pub fn sleep(duration: Duration) {
    wit::sleep(super::millis(duration));
}

/// Waits for the signal `name` sent to this job (`sluice jobs signal`, `sluice.signal(…)`
/// in SQL, `POST /v1/jobs/{id}/signals/{name}`) and returns its payload: JSON bytes, the
/// text `null` for a signal sent without one. `Ok(None)` means `timeout` passed first
/// (fixed by the first call, like [`sleep`]); `timeout: None` waits until a signal comes
/// or the job is cancelled.
///
/// Signals are kept until awaited: each call consumes the oldest signal of that name not
/// yet consumed, so one sent before the call is returned at once. Not durable:
/// [`WaitError::NotDurable`].
pub fn await_signal(name: &str, timeout: Option<Duration>) -> Result<Option<Vec<u8>>, WaitError> {
    Ok(wit::await_signal(name, timeout.map(super::millis))?)
}

/// [`await_signal`] with the payload decoded from JSON (`serde_json::Value` takes any).
/// A refused wait and a payload that is not JSON for `T` are both [`TaskError::Fatal`].
pub fn await_signal_json<T: DeserializeOwned>(
    name: &str,
    timeout: Option<Duration>,
) -> Result<Option<T>, TaskError> {
    match await_signal(name, timeout)? {
        None => Ok(None),
        Some(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            TaskError::fatal(format!(
                "signal {name}: payload is not the JSON expected: {e}"
            ))
        }),
    }
}

/// Waits until every job in `ids` has finished and returns their outcomes in the order of
/// `ids` (fan-in). Each id must have been returned to this job by
/// [`crate::v0_3::jobs::enqueue`], in this run or an earlier one, and be listed once;
/// otherwise [`WaitError::Invalid`]. An empty list returns at once. Children enqueued in
/// this run are inserted by the suspension, so enqueue and await in the same run. Not
/// durable: [`WaitError::NotDurable`].
pub fn await_jobs(ids: &[u64]) -> Result<Vec<ChildOutcome>, WaitError> {
    let outcomes = wit::await_jobs(ids)?;
    Ok(outcomes.into_iter().map(ChildOutcome::from).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(state: wit::ChildState, output: Option<&[u8]>, error: Option<&str>) -> ChildOutcome {
        wit::ChildOutcome {
            id: 42,
            state,
            output: output.map(<[u8]>::to_vec),
            error: error.map(str::to_owned),
        }
        .into()
    }

    #[test]
    fn wait_errors_are_fatal_and_say_what_to_do() {
        let e: WaitError = wit::WaitError::NotDurable.into();
        let task: TaskError = e.into();
        assert!(!task.is_retry());
        assert!(task.message().contains("--durable"), "{task}");
        let e: WaitError = wit::WaitError::Invalid("id 3 listed twice".into()).into();
        assert_eq!(e.to_string(), "invalid wait: id 3 listed twice");
    }

    #[test]
    fn outcomes_convert_and_decode() {
        let done = outcome(wit::ChildState::Completed, Some(br#"{"n": 1}"#), None);
        assert!(done.is_completed());
        assert_eq!(done.text().as_deref(), Some(r#"{"n": 1}"#));
        let v: serde_json::Value = done.json().unwrap();
        assert_eq!(v["n"], 1);
        assert!(done.json::<u32>().unwrap_err().message().contains("job 42"));

        let dead = outcome(wit::ChildState::Dead, None, Some("boom"));
        assert_eq!(dead.state, ChildState::Dead);
        assert_eq!(dead.text(), None);
        let e = dead.json::<serde_json::Value>().unwrap_err();
        assert_eq!(
            e,
            TaskError::fatal("job 42 ended dead (boom): it has no output")
        );
        let cancelled = outcome(wit::ChildState::Cancelled, None, None);
        assert_eq!(cancelled.state.to_string(), "cancelled");
    }
}
