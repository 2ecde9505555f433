//! Shared vocabulary of the queue: job states, key scopes, attempt outcomes, priorities,
//! the lease a worker holds and the retry backoff.
//!
//! Owns: the Rust mirrors of the `sluice.job_state` and `sluice.key_scope` enums and of
//! `job_attempts.outcome`. Must not: run SQL.

use std::fmt;
use std::time::Duration;

/// State of a job. Mirrors the Postgres enum `sluice.job_state` one to one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, sqlx::Type, serde::Deserialize)]
#[sqlx(type_name = "sluice.job_state", rename_all = "lowercase")]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    /// Waiting for `run_at` and a free worker.
    Pending,
    /// Claimed by a worker that holds a lease.
    Running,
    /// A durable job that suspended its run (a long sleep, an awaited signal, awaited
    /// follow-up jobs): no lease, no slot, not claimable until woken (`run_at`, a signal,
    /// its children finishing), and not finished.
    Waiting,
    /// Finished successfully (terminal).
    Completed,
    /// Failed for good: attempts used up, a fatal error, or an expired lease on the last
    /// attempt (terminal; `retry` brings it back).
    Dead,
    /// Cancelled by an operator (terminal; `retry` brings it back).
    Cancelled,
}

impl JobState {
    /// All states, in lifecycle order.
    pub const ALL: [JobState; 6] = [
        JobState::Pending,
        JobState::Running,
        JobState::Waiting,
        JobState::Completed,
        JobState::Dead,
        JobState::Cancelled,
    ];

    /// The SQL/wire spelling: `pending`, `running`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Pending => "pending",
            JobState::Running => "running",
            JobState::Waiting => "waiting",
            JobState::Completed => "completed",
            JobState::Dead => "dead",
            JobState::Cancelled => "cancelled",
        }
    }

    /// Completed, dead and cancelled jobs are finished (`finished_at` is set).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobState::Completed | JobState::Dead | JobState::Cancelled
        )
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for JobState {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        JobState::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| {
                format!("unknown job state {s:?}: expected pending, running, waiting, completed, dead or cancelled")
            })
    }
}

/// How long a job's idempotency key stays taken. Mirrors `sluice.key_scope`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, sqlx::Type, serde::Deserialize)]
#[sqlx(type_name = "sluice.key_scope", rename_all = "lowercase")]
#[serde(rename_all = "lowercase")]
pub enum KeyScope {
    /// Taken for as long as the job row exists, whatever its state (until retention
    /// deletes it). "Charge order 42 once."
    #[default]
    Retained,
    /// Taken only while the job is pending, running or waiting; freed when it completes, dies or
    /// is cancelled. "The nightly digest for user 7": one at a time.
    Unfinished,
}

impl KeyScope {
    /// The SQL spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyScope::Retained => "retained",
            KeyScope::Unfinished => "unfinished",
        }
    }
}

/// How an attempt ended (`job_attempts.outcome`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, sqlx::Type, serde::Deserialize)]
#[sqlx(type_name = "text", rename_all = "snake_case")]
#[serde(rename_all = "snake_case")]
pub enum AttemptOutcome {
    /// The job completed.
    Completed,
    /// The attempt failed and the job went back to pending for another attempt.
    Retry,
    /// The attempt failed and the job is dead.
    Dead,
    /// The worker gave the job back without using the attempt (shutdown, infrastructure).
    Released,
    /// The worker's lease expired; the reaper took the job back.
    LeaseExpired,
    /// The job was cancelled while this attempt ran.
    Cancelled,
    /// The run suspended (a durable wait or a snooze) without spending the attempt; the
    /// history row's error names the cause.
    Suspended,
}

impl AttemptOutcome {
    /// Every outcome, in the order above.
    pub const ALL: [AttemptOutcome; 7] = [
        AttemptOutcome::Completed,
        AttemptOutcome::Retry,
        AttemptOutcome::Dead,
        AttemptOutcome::Released,
        AttemptOutcome::LeaseExpired,
        AttemptOutcome::Cancelled,
        AttemptOutcome::Suspended,
    ];

    /// The value stored in `job_attempts.outcome`.
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptOutcome::Completed => "completed",
            AttemptOutcome::Retry => "retry",
            AttemptOutcome::Dead => "dead",
            AttemptOutcome::Released => "released",
            AttemptOutcome::LeaseExpired => "lease_expired",
            AttemptOutcome::Cancelled => "cancelled",
            AttemptOutcome::Suspended => "suspended",
        }
    }
}

/// Priority labels. Any `i16` value is allowed; higher runs first.
pub mod priority {
    /// Background work nobody waits for.
    pub const LOW: i32 = 0;
    /// The usual priority.
    pub const MEDIUM: i32 = 10;
    /// Someone is waiting.
    pub const HIGH: i32 = 20;
    /// Drop everything.
    pub const CRITICAL: i32 = 30;

    /// The value of a label (`low`, `medium`, `high`, `critical`); `None` for anything
    /// else. The one mapping the CLI and the HTTP API both use.
    pub fn from_label(label: &str) -> Option<i32> {
        match label {
            "low" => Some(LOW),
            "medium" => Some(MEDIUM),
            "high" => Some(HIGH),
            "critical" => Some(CRITICAL),
            _ => None,
        }
    }
}

/// Proof that a worker holds a running job. Every state change a worker makes is fenced
/// on `job_id`, `state = 'running'` and `token`; a new claim mints a new token, so a
/// worker whose lease expired cannot overwrite its successor's work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Deserialize)]
pub struct Lease {
    /// The running job's id (`sluice.jobs.id`).
    pub job_id: i64,
    /// The `lease_token` the claim minted; matches the row only until the job leaves
    /// `running` or is claimed again.
    pub token: uuid::Uuid,
}

/// Retry delay policy: `min(cap, base * 2^(attempt-1)) * (1 ± jitter * random())`,
/// computed in SQL from database time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Backoff {
    /// Delay after the first failed attempt; doubled per later attempt.
    pub base: Duration,
    /// Longest delay, whatever the attempt.
    pub cap: Duration,
    /// Fraction in `0.0..=1.0`.
    pub jitter: f64,
}

impl Default for Backoff {
    /// 1 s, capped at 1 h, ±20 %.
    fn default() -> Self {
        Backoff {
            base: Duration::from_secs(1),
            cap: Duration::from_secs(3600),
            jitter: 0.2,
        }
    }
}
