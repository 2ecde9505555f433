//! A run that suspends (`wit/README.md`, "Suspension"): the host function that suspends
//! records its cause here ([`Suspension`]) and ends the guest with [`Suspended`]; `run.rs`
//! maps that ending to [`crate::Outcome::Suspended`], which the host records with its
//! fenced suspension statement. Also what one run's capabilities share about it: the ids
//! `jobs.enqueue` returned (the only ones `durable.await-jobs` accepts).
//!
//! Must not: decide when to suspend (the `durable` and `flow` capabilities do), or know
//! the database.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Why a run suspended, as the host records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Suspension {
    /// `durable.sleep` longer than the in-place threshold: wake at this instant
    /// (milliseconds since the Unix epoch, UTC).
    Sleep {
        /// The wake-up instant, fixed by the first call.
        until_ms: i64,
    },
    /// `durable.await-signal`: wake when the signal `name` is sent, or at the deadline.
    Signal {
        /// The signal's name.
        name: String,
        /// When to give up (milliseconds since the Unix epoch; `None`: never).
        deadline_ms: Option<i64>,
    },
    /// `durable.await-jobs`: wake when every job of `ids` has finished.
    Jobs {
        /// The awaited follow-up jobs, as `jobs.enqueue` returned them.
        ids: Vec<u64>,
    },
    /// `flow.snooze`: run again after `delay`, without spending an attempt.
    Snooze {
        /// How long from the suspension.
        delay: Duration,
    },
}

impl fmt::Display for Suspension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Suspension::Sleep { until_ms } => write!(f, "sleep until {}", instant(*until_ms)),
            Suspension::Signal {
                name,
                deadline_ms: None,
            } => write!(f, "await signal `{name}`"),
            Suspension::Signal {
                name,
                deadline_ms: Some(deadline),
            } => write!(f, "await signal `{name}` until {}", instant(*deadline)),
            Suspension::Jobs { ids } => {
                let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
                write!(f, "await jobs {}", ids.join(", "))
            }
            Suspension::Snooze { delay } => {
                write!(f, "snooze {}", humantime::format_duration(*delay))
            }
        }
    }
}

/// `1970-01-01T00:00:05Z`-style text of an instant in milliseconds since the epoch.
fn instant(ms: i64) -> String {
    let at = std::time::UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_millis(at).to_string()
}

/// The error that ends a guest whose run suspended; the cause is in [`RunShared`].
#[derive(Debug)]
pub(crate) struct Suspended;

impl fmt::Display for Suspended {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the run suspended")
    }
}

impl std::error::Error for Suspended {}

#[derive(Default)]
struct Shared {
    suspension: Option<Suspension>,
    enqueued: Vec<u64>,
}

/// What one run's capabilities share about it (cheap to clone).
#[derive(Clone, Default)]
pub(crate) struct RunShared(Arc<Mutex<Shared>>);

impl RunShared {
    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records why the run suspends and returns the error that ends the guest.
    pub(crate) fn suspend(&self, why: Suspension) -> wasmtime::Error {
        self.lock().suspension.get_or_insert(why);
        wasmtime::Error::new(Suspended)
    }

    /// Why the run suspended, if it did.
    pub(crate) fn suspension(&self) -> Option<Suspension> {
        self.lock().suspension.clone()
    }

    /// Notes an id `jobs.enqueue` returned in this run.
    pub(crate) fn enqueued(&self, id: u64) {
        self.lock().enqueued.push(id);
    }

    /// True when `jobs.enqueue` returned `id` in this run (replayed calls included).
    pub(crate) fn was_enqueued(&self, id: u64) -> bool {
        id != 0 && self.lock().enqueued.contains(&id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suspensions_read_as_their_cause() {
        let cases = [
            (
                Suspension::Sleep { until_ms: 5_000 },
                "sleep until 1970-01-01T00:00:05.000Z",
            ),
            (
                Suspension::Signal {
                    name: "approve".into(),
                    deadline_ms: None,
                },
                "await signal `approve`",
            ),
            (Suspension::Jobs { ids: vec![4, 7] }, "await jobs 4, 7"),
            (
                Suspension::Snooze {
                    delay: Duration::from_secs(30),
                },
                "snooze 30s",
            ),
        ];
        for (suspension, text) in cases {
            assert_eq!(suspension.to_string(), text);
        }
    }

    #[test]
    fn the_first_suspension_wins_and_ids_are_remembered() {
        let run = RunShared::default();
        let _ = run.suspend(Suspension::Jobs { ids: vec![1] });
        let _ = run.suspend(Suspension::Sleep { until_ms: 1 });
        assert_eq!(run.suspension(), Some(Suspension::Jobs { ids: vec![1] }));
        run.enqueued(9);
        assert!(run.was_enqueued(9) && !run.was_enqueued(8) && !run.was_enqueued(0));
    }
}
