//! The reaper: running jobs whose lease expired (their host died or stalled) go back to
//! pending, or to dead when that was their last attempt.
//!
//! Owns: the reap statement. Must not: touch a job whose lease is still valid, or read
//! the host clock to decide expiry (only the database's `now()`).

use chrono::{DateTime, Utc};

use crate::listen::JOBS_CHANNEL;
use crate::types::JobState;
use crate::{Store, StoreError};

/// A job the reaper took back.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct ReapedJob {
    /// The reaped job's id (`sluice.jobs.id`).
    pub id: i64,
    /// The tenant that owns it.
    pub tenant: String,
    /// Its job type's name (for the metrics labels).
    pub job_type: String,
    /// Pending (attempts left), dead (none left) or cancelled (a cancel was requested).
    pub state: JobState,
    /// The attempt that expired.
    pub attempt: i32,
    /// Its attempt budget: an expired attempt numbered this made it dead (unless a cancel
    /// was requested).
    pub max_attempts: i32,
    /// The worker that held the lease.
    pub worker: String,
    /// When its lease expired.
    pub locked_until: DateTime<Utc>,
    /// The `last_error` written: "lease expired (held by ... until ...) ...".
    pub error: String,
}

/// Oldest expiries first, SKIP LOCKED; the attempt is not given back (see the file).
const REAP: &str = include_str!("../sql/reap/reap.sql");

impl Store {
    /// Takes back up to `limit` jobs whose lease expired. Call it periodically from every
    /// host; it returns what it did so the caller can log and count it.
    #[tracing::instrument(name = "store.reap", level = "debug", skip_all, fields(limit))]
    pub async fn reap(&self, limit: u32) -> Result<Vec<ReapedJob>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        Ok(sqlx::query_as(REAP)
            .bind(i64::from(limit))
            .bind(JOBS_CHANNEL)
            .fetch_all(&self.pool)
            .await?)
    }
}
