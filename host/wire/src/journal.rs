//! How a durable job's journal looks in JSON ([`JournalView`]: `GET /v1/jobs/{id}/journal`
//! and `sluice jobs journal ID --json`): each host call the guest observed, in order,
//! with its request's fingerprint, a summary and the first bytes of its result.
//!
//! Owns: this shape and its conversion from `sluice_store::JournalRecord`. Must not: read
//! or write anything, or decode a result (the summary, made when it was recorded, says
//! what it was).

use chrono::{DateTime, Utc};
use serde::Serialize;
use sluice_store::JournalRecord;
use utoipa::ToSchema;

/// Result bytes shown per entry; the rest is counted in `result_bytes`.
pub const RESULT_SHOWN: usize = 256;

/// One journaled host call.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JournalEntryView {
    /// From 0, in the order the guest made its calls.
    #[schema(minimum = 0)]
    pub seq: i32,
    /// `wall-clock`, `monotonic-clock`, `random`, `http`, `secret` or `enqueue`.
    pub kind: String,
    /// The request's fingerprint, compared on replay (`POST http://host/path #hash`, a
    /// secret's name, `16 bytes`, ...).
    pub request: String,
    /// What the guest got, for people (`200, 12 bytes`, `found`, ...).
    pub summary: String,
    /// The result's first bytes as text (invalid UTF-8 and control characters replaced).
    pub result: String,
    /// The result's whole size.
    #[schema(minimum = 0)]
    pub result_bytes: usize,
    /// The attempt that made the call live and recorded it.
    #[schema(minimum = 1)]
    pub attempt: i32,
    /// True when a later attempt ran and was answered from this entry instead of calling.
    pub replayed: bool,
    /// When it was recorded.
    pub recorded_at: DateTime<Utc>,
}

impl From<JournalRecord> for JournalEntryView {
    fn from(r: JournalRecord) -> Self {
        let shown = &r.result[..r.result.len().min(RESULT_SHOWN)];
        let result = String::from_utf8_lossy(shown)
            .chars()
            .map(|c| {
                if c.is_control() && c != '\n' {
                    '\u{FFFD}'
                } else {
                    c
                }
            })
            .collect();
        JournalEntryView {
            seq: r.seq,
            kind: r.kind,
            request: r.request,
            summary: r.summary,
            result,
            result_bytes: r.result.len(),
            attempt: r.attempt,
            replayed: r.replayed,
            recorded_at: r.recorded_at,
        }
    }
}

/// A job's journal, in call order (empty: the job is not durable or journaled nothing).
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JournalView {
    /// The job.
    #[schema(minimum = 1)]
    pub job_id: i64,
    /// Its entries, in call order.
    pub entries: Vec<JournalEntryView>,
}

impl JournalView {
    /// The view of `job_id`'s journal records.
    pub fn new(job_id: i64, records: Vec<JournalRecord>) -> Self {
        JournalView {
            job_id,
            entries: records.into_iter().map(Into::into).collect(),
        }
    }
}
