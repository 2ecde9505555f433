//! What an attempt produced: [`RunReport`], [`Outcome`] and [`Failure`], and the wording
//! of failure reasons (`timeout (30s)`, `memory limit (128 MiB)`, ...).
//!
//! Pure data and formatting. Must not decide outcomes (that is `run.rs`) or touch wasmtime.

use std::fmt;
use std::time::Duration;

use crate::capabilities::http::HttpCalls;
use crate::capabilities::jobs::FollowUp;
use crate::journal::JournalCounts;
use crate::suspend::Suspension;

/// Everything the worker needs to record one attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunReport {
    /// How the attempt ended.
    pub outcome: Outcome,
    /// Fuel consumed by the guest (instantiation and call).
    pub fuel_used: u64,
    /// The attempt's log (host `log` lines, then stdout/stderr lines), cut at the log limit.
    pub logs: Vec<u8>,
    /// True when log bytes were dropped at the cap.
    pub logs_truncated: bool,
    /// How many log bytes were dropped.
    pub logs_dropped_bytes: u64,
    /// Wall-clock time of the attempt: instantiation plus the call (not time spent waiting
    /// for a free slot).
    pub elapsed: Duration,
    /// Time to instantiate from the cached `InstancePre` (a metric; part of `elapsed`).
    pub instantiate_time: Duration,
    /// Instantiation plus the call of `run` until it returned (part of `elapsed`, which
    /// also counts building the store and reading the outcome).
    pub guest_time: Duration,
    /// Peak linear memory of the instance, summed over its memories.
    pub peak_memory_bytes: u64,
    /// The attempt's outbound HTTP requests (empty for tasks that make none).
    pub http: HttpCalls,
    /// The follow-up jobs a completed attempt (or a durable one that suspended) asked
    /// for, in order (empty for any other ending: they are dropped with it).
    pub follow_ups: Vec<FollowUp>,
    /// A durable job's calls replayed and recorded (`None`: not durable).
    pub journal: Option<JournalCounts>,
}

/// How an attempt ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The guest returned `ok(output)`.
    Completed {
        /// The job's output bytes.
        output: Vec<u8>,
    },
    /// The attempt failed; see [`Failure::reason`] and [`Failure::is_fatal`].
    Failed(Failure),
    /// The run suspended itself (contract 0.3: a durable wait, a snooze): no attempt is
    /// spent; the host records the cause and runs the job again when it is due.
    Suspended(Suspension),
}

impl Outcome {
    /// The failure, if the attempt failed.
    pub fn failure(&self) -> Option<&Failure> {
        match self {
            Outcome::Completed { .. } | Outcome::Suspended(_) => None,
            Outcome::Failed(f) => Some(f),
        }
    }
}

/// Why an attempt failed. Only [`Failure::GuestFatal`] is permanent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The guest returned `err(retry(msg))`. The message as shown: its first 4 KiB, then
    /// `… (N bytes dropped)`; marked when it was not valid UTF-8 or could not be read.
    GuestRetry(String),
    /// The guest returned `err(fatal(msg))`: the job is dead at once, whatever the message
    /// (shown as for `GuestRetry`).
    GuestFatal(String),
    /// The attempt ran past its wall-clock timeout (the figure is the limit).
    Timeout(Duration),
    /// The guest used all its fuel (the figure is the limit, in units).
    FuelExhausted(u64),
    /// The guest tried to grow its linear memory past the limit (bytes).
    MemoryLimit(u64),
    /// The guest tried to grow a table past the limit (elements).
    TableLimit(u64),
    /// The guest's `ok` bytes exceeded the output limit (bytes). (An oversized error
    /// message is truncated instead, and keeps its `retry` or `fatal`.)
    OutputTooLarge(u64),
    /// The guest trapped: `stack overflow`, `unreachable (panic)`, ...; or broke the
    /// canonical ABI at the `run` boundary: `invalid result from guest: result tag 7 ...`,
    /// `invalid allocation from guest while passing the job in: ...`.
    Trap(String),
    /// The attempt was cancelled (operator or host shutdown).
    Cancelled,
    /// A sleep in a type that is not durable would have outlasted the attempt's timeout:
    /// it failed at once (retryable) instead of holding the slot until then; the message
    /// names the sleep and the time left.
    SleepTooLong(String),
    /// The host failed to run the attempt; not the guest's fault.
    Internal(String),
    /// A durable job's journal stopped the attempt: a replayed call differed from the
    /// recorded one or the journal reached its cap (`fatal`), or the journal could not
    /// be written (the lease was lost, the database unreachable: retried).
    Journal {
        /// What stopped it, for the attempt's error.
        reason: String,
        /// Fatal (divergence, cap) rather than retried.
        fatal: bool,
    },
}

impl Failure {
    /// A short reason naming the cause and its figure, for `last_error`:
    /// `timeout (30s)`, `fuel exhausted (5000000000 units)`, `memory limit (128 MiB)`,
    /// `output too large (1 MiB)`, `trap: stack overflow`, `cancelled`,
    /// `guest retry: <msg>`, `guest fatal: <msg>`.
    pub fn reason(&self) -> String {
        self.to_string()
    }

    /// True when the job must not be retried (a guest's `fatal` error, a replay that
    /// diverged, a journal over its cap).
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            Failure::GuestFatal(_) | Failure::Journal { fatal: true, .. }
        )
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::GuestRetry(msg) => write!(f, "guest retry: {msg}"),
            Failure::GuestFatal(msg) => write!(f, "guest fatal: {msg}"),
            Failure::Timeout(limit) => write!(f, "timeout ({})", human_duration(*limit)),
            Failure::FuelExhausted(limit) => write!(f, "fuel exhausted ({limit} units)"),
            Failure::MemoryLimit(limit) => write!(f, "memory limit ({})", human_bytes(*limit)),
            Failure::TableLimit(limit) => write!(f, "table limit ({limit} elements)"),
            Failure::OutputTooLarge(limit) => {
                write!(f, "output too large ({})", human_bytes(*limit))
            }
            Failure::Trap(kind) => write!(f, "trap: {kind}"),
            Failure::Cancelled => f.write_str("cancelled"),
            Failure::SleepTooLong(why) => f.write_str(why),
            Failure::Internal(msg) => write!(f, "internal error: {msg}"),
            Failure::Journal { reason, .. } => write!(f, "journal: {reason}"),
        }
    }
}

/// `1 MiB`, `60 MiB`, `1.5 MiB`, `64 KiB`, `100 bytes`.
pub(crate) fn human_bytes(n: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, unit) in UNITS {
        if n >= size {
            return if n.is_multiple_of(size) {
                format!("{} {unit}", n / size)
            } else {
                // One decimal, truncated rather than rounded up so 60.99 MiB never shows
                // as "61 MiB" next to a 61 MiB limit.
                let tenths = n.saturating_mul(10) / size;
                format!("{}.{} {unit}", tenths / 10, tenths % 10)
            };
        }
    }
    if n == 1 {
        "1 byte".to_owned()
    } else {
        format!("{n} bytes")
    }
}

/// `200ms`, `30s`, `15m`, `1h 30m`.
pub(crate) fn human_duration(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_name_the_limit_and_figure() {
        let cases = [
            (Failure::Timeout(Duration::from_secs(30)), "timeout (30s)"),
            (
                Failure::Timeout(Duration::from_millis(200)),
                "timeout (200ms)",
            ),
            (
                Failure::FuelExhausted(5_000_000_000),
                "fuel exhausted (5000000000 units)",
            ),
            (Failure::MemoryLimit(128 << 20), "memory limit (128 MiB)"),
            (Failure::OutputTooLarge(1 << 20), "output too large (1 MiB)"),
            (Failure::TableLimit(20_000), "table limit (20000 elements)"),
            (
                Failure::Trap("stack overflow".into()),
                "trap: stack overflow",
            ),
            (Failure::Cancelled, "cancelled"),
            (Failure::GuestRetry("busy".into()), "guest retry: busy"),
            (
                Failure::GuestFatal("bad input".into()),
                "guest fatal: bad input",
            ),
        ];
        for (failure, want) in cases {
            assert_eq!(failure.reason(), want);
        }
    }

    #[test]
    fn only_guest_fatal_is_fatal() {
        assert!(Failure::GuestFatal("x".into()).is_fatal());
        assert!(!Failure::GuestRetry("x".into()).is_fatal());
        assert!(!Failure::Trap("x".into()).is_fatal());
        assert!(!Failure::Cancelled.is_fatal());
    }

    #[test]
    fn bytes_are_human() {
        assert_eq!(human_bytes(60 << 20), "60 MiB");
        assert_eq!(human_bytes(50 << 20), "50 MiB");
        assert_eq!(human_bytes((1 << 20) + (1 << 19)), "1.5 MiB");
        assert_eq!(human_bytes(64 << 10), "64 KiB");
        assert_eq!(human_bytes(100), "100 bytes");
        assert_eq!(human_bytes(2 << 30), "2 GiB");
    }
}
