//! Stored attempt logs (`sluice.attempt_logs`, migration 0017): what the worker hands the
//! store with an attempt's end ([`AttemptLog`], bound as arrays by `finish.rs` into the
//! fenced statement that ends the attempt), and how a job's tenant reads them back
//! ([`Store::attempt_logs`]).
//!
//! Owns: the shape of a stored log, the arrays `finish/*.sql` bind for it (NULL for a
//! quiet attempt, so it writes nothing), the read statement and the rendering of a
//! truncated log (`… 12,345 bytes dropped`). Must not: write a log in any statement but
//! the one that ends its attempt, or read one without the tenant scope callers pass.

use chrono::{DateTime, Utc};

use crate::types::AttemptOutcome;
use crate::{Store, StoreError, text};

/// The attempts of a job with their logs.
const ATTEMPT_LOGS: &str = include_str!("../sql/admin/attempt_logs.sql");

/// What one attempt logged, as the sandbox captured it (secret values already masked),
/// cut at the attempt's log cap.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AttemptLog {
    /// The kept bytes: `[INFO] message` lines, then `[stdout] ...` / `[stderr] ...`.
    pub bytes: Vec<u8>,
    /// How many bytes the cap dropped.
    pub dropped_bytes: u64,
}

impl AttemptLog {
    /// The log of an attempt, or `None` when it logged nothing (nothing is stored then).
    pub fn captured(bytes: Vec<u8>, dropped_bytes: u64) -> Option<AttemptLog> {
        (!bytes.is_empty() || dropped_bytes > 0).then_some(AttemptLog {
            bytes,
            dropped_bytes,
        })
    }

    fn dropped(&self) -> i64 {
        i64::try_from(self.dropped_bytes).unwrap_or(i64::MAX)
    }
}

/// The log arrays of a batch, in the batch's order: the bytes (`None` for a quiet
/// attempt; the whole array `None` when every attempt was quiet, so the statement skips
/// looking) and the dropped counts.
pub(crate) type LogColumns<'a> = (Option<Vec<Option<&'a [u8]>>>, Vec<i64>);

pub(crate) fn log_columns<'a>(
    logs: impl Iterator<Item = Option<&'a AttemptLog>>,
) -> LogColumns<'a> {
    let mut bytes = Vec::new();
    let mut dropped = Vec::new();
    for log in logs {
        bytes.push(log.map(|l| l.bytes.as_slice()));
        dropped.push(log.map_or(0, AttemptLog::dropped));
    }
    let any = bytes.iter().any(Option::is_some);
    (any.then_some(bytes), dropped)
}

/// The log of one attempt as bound by `finish/mark_cancelled.sql`.
pub(crate) fn log_params(log: Option<&AttemptLog>) -> (Option<&[u8]>, Option<i64>) {
    (
        log.map(|l| l.bytes.as_slice()),
        log.map(AttemptLog::dropped),
    )
}

/// One attempt of a job and its stored log.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct AttemptLogRecord {
    /// The attempt's id (`sluice.job_attempts.id`), in claim order across the job's runs.
    pub attempt_id: i64,
    /// The attempt number (it starts again at 1 after an operator's retry).
    pub attempt: i32,
    /// When the attempt was claimed.
    pub started_at: DateTime<Utc>,
    /// `None` while the attempt runs.
    pub finished_at: Option<DateTime<Utc>>,
    /// How the attempt ended; `None` while it runs.
    pub outcome: Option<AttemptOutcome>,
    /// `None`: the attempt logged nothing (or still runs).
    pub log: Option<Vec<u8>>,
    /// Bytes the attempt's log cap dropped.
    pub dropped_bytes: i64,
}

impl AttemptLogRecord {
    /// True when something was stored for this attempt.
    pub fn has_log(&self) -> bool {
        self.log.is_some()
    }

    /// The log for people: its bytes as UTF-8 (invalid sequences replaced; the cap may
    /// cut a character), then `… 12,345 bytes dropped` on a line of its own when the cap
    /// dropped bytes.
    pub fn text(&self) -> String {
        let mut text =
            String::from_utf8_lossy(self.log.as_deref().unwrap_or_default()).into_owned();
        if self.dropped_bytes > 0 {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&dropped_line(self.dropped_bytes));
            text.push('\n');
        }
        text
    }
}

/// `… 12,345 bytes dropped` (`… 1 byte dropped`).
pub fn dropped_line(dropped: i64) -> String {
    let digits = dropped.unsigned_abs().to_string();
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let unit = if dropped == 1 { "byte" } else { "bytes" };
    format!("… {grouped} {unit} dropped")
}

impl Store {
    /// The attempts of job `id` with their logs, oldest first; only attempt number
    /// `attempt` when given. Empty when the job does not exist, belongs to another tenant
    /// (`tenant` given), or has no such attempt: callers tell those apart with
    /// [`Store::get`] (scoped the same way).
    pub async fn attempt_logs(
        &self,
        tenant: Option<&str>,
        id: i64,
        attempt: Option<i32>,
    ) -> Result<Vec<AttemptLogRecord>, StoreError> {
        if !tenant.is_none_or(text::findable) {
            return Ok(Vec::new());
        }
        Ok(sqlx::query_as(ATTEMPT_LOGS)
            .bind(id)
            .bind(tenant)
            .bind(attempt)
            .fetch_all(&self.pool)
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropped_counts_are_grouped_by_thousands() {
        assert_eq!(dropped_line(1), "… 1 byte dropped");
        assert_eq!(dropped_line(999), "… 999 bytes dropped");
        assert_eq!(dropped_line(12_345), "… 12,345 bytes dropped");
        assert_eq!(dropped_line(1_234_567), "… 1,234,567 bytes dropped");
    }

    #[test]
    fn quiet_attempts_store_nothing_and_whole_quiet_batches_bind_null() {
        assert_eq!(AttemptLog::captured(Vec::new(), 0), None);
        assert!(AttemptLog::captured(Vec::new(), 3).is_some());
        let (bytes, dropped) = log_columns([None, None].into_iter());
        assert_eq!((bytes, dropped), (None, vec![0, 0]));
        let log = AttemptLog::captured(b"[INFO] hi\n".to_vec(), 5).unwrap();
        let (bytes, dropped) = log_columns([None, Some(&log)].into_iter());
        assert_eq!(bytes, Some(vec![None, Some(&b"[INFO] hi\n"[..])]));
        assert_eq!(dropped, vec![0, 5]);
    }

    #[test]
    fn text_ends_with_the_dropped_line() {
        let record = AttemptLogRecord {
            attempt_id: 1,
            attempt: 1,
            started_at: Utc::now(),
            finished_at: None,
            outcome: None,
            log: Some(b"[INFO] abc".to_vec()),
            dropped_bytes: 12_345,
        };
        assert_eq!(record.text(), "[INFO] abc\n… 12,345 bytes dropped\n");
    }
}
