//! What `sluice run --json` prints: one attempt run locally, with no database
//! ([`LocalRunView`]), and the follow-up jobs it asked for ([`FollowUpView`]), printed
//! instead of enqueued. Only the CLI prints it; the HTTP API has no such object.
//!
//! Owns: these shapes. Must not: read or write anything, or know the sandbox's types (the
//! CLI fills the fields from the attempt's report).

use serde::Serialize;

/// One local attempt: how it ended, what it returned and logged, and what it used.
#[derive(Debug, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LocalRunView {
    /// `completed`, `retry`, `fatal`, `limit_exceeded`, `cancelled` or `internal`.
    pub outcome: &'static str,
    /// The process's exit code for that outcome (docs/cli.md).
    pub exit_code: u8,
    /// Why the attempt did not complete (`fuel exhausted (1000 units)`, `guest retry:
    /// …`); null when it completed.
    pub reason: Option<String>,
    /// The output of a completed attempt: JSON when it is JSON, else text (lossy UTF-8;
    /// [`bytes_as_json`](crate::jobs::bytes_as_json)); null otherwise.
    pub output: Option<serde_json::Value>,
    /// Output bytes (0 when the attempt did not complete).
    pub output_bytes: u64,
    /// The attempt's log (host `log` lines, then stdout and stderr), lossy UTF-8.
    pub logs: String,
    /// True when log bytes were dropped at `--max-log`.
    pub logs_truncated: bool,
    /// Fuel the guest consumed.
    pub fuel_used: u64,
    /// Wall-clock time of the attempt (instantiation plus the call), in milliseconds.
    pub duration_ms: f64,
    /// Peak linear memory of the instance, in bytes.
    pub peak_memory_bytes: u64,
    /// Outbound HTTP requests the guest started (denied ones included).
    pub http_requests: usize,
    /// Each request's ending, in order: `ok`, `denied`, `timeout` or `error`.
    pub http_outcomes: Vec<&'static str>,
    /// The follow-up jobs a completed attempt asked for, in order (not enqueued).
    pub follow_ups: Vec<FollowUpView>,
}

/// A follow-up job the attempt asked for.
#[derive(Debug, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FollowUpView {
    /// The job type it names.
    pub job_type: String,
    /// Its payload: JSON when it is JSON, else text.
    pub payload: serde_json::Value,
    /// Its priority, when it set one.
    pub priority: Option<i16>,
    /// Its delay after the parent's completion, in milliseconds, when it set one.
    pub delay_ms: Option<u64>,
    /// When it is due, in milliseconds since the Unix epoch, when it set that.
    pub run_at_ms: Option<i64>,
    /// Its attempt budget, when it set one.
    pub max_attempts: Option<u32>,
    /// Its idempotency key, when it set one.
    pub idempotency_key: Option<String>,
}
