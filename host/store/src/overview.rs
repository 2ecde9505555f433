//! The dashboard's overview figures that `stats.rs` does not give: a tenant's throughput
//! per minute, and what every worker runs now.
//!
//! Owns: the read-only statements under `sql/overview/`. Must not: change any row, or
//! read the host clock (minutes are the database's, and UTC minutes).
//!
//! Cost: the throughput reads the window's completed jobs through `jobs_finished_idx` and
//! its failed attempts through `attempt_history_failed_idx` (migration 0019); the running
//! list reads the running rows through `jobs_running_idx`. Meant for a page refreshed
//! every few seconds, not for a hot path.

use chrono::{DateTime, Utc};

use crate::{Store, StoreError, text};

/// The longest window [`Store::throughput`] reports: 3 hours.
pub const MAX_THROUGHPUT_MINUTES: u32 = 180;

/// The most rows [`Store::running_jobs`] returns.
pub const MAX_RUNNING_JOBS: u32 = 10_000;

/// One minute of a tenant's throughput.
#[derive(Clone, Copy, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct MinuteCounts {
    /// The start of the (UTC) minute.
    pub minute: DateTime<Utc>,
    /// Jobs that completed in it.
    pub completed: i64,
    /// Attempts that ended in it with a failure: retried, dead, or lease expired.
    pub failed: i64,
}

/// A running job and the worker holding its lease.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct RunningJob {
    /// `locked_by`: the worker id.
    pub worker: String,
    /// The tenant that owns the job.
    pub tenant: String,
    /// The running job's id.
    pub job_id: i64,
    /// Its job type's name.
    pub job_type: String,
    /// The number of the attempt running, from 1.
    pub attempt: i32,
    /// When the running attempt started.
    pub started_at: Option<DateTime<Utc>>,
}

const THROUGHPUT: &str = include_str!("../sql/overview/throughput.sql");
const RUNNING_JOBS: &str = include_str!("../sql/overview/running_jobs.sql");

impl Store {
    /// One row per minute for the last `minutes` minutes (clamped to `1..=180`), oldest
    /// first, the current (partial) minute last, zero-filled: the tenant's jobs that
    /// completed in each minute and its attempts that failed in it.
    pub async fn throughput(
        &self,
        tenant: &str,
        minutes: u32,
    ) -> Result<Vec<MinuteCounts>, StoreError> {
        let minutes = minutes.clamp(1, MAX_THROUGHPUT_MINUTES);
        // A name with NUL has no jobs; still one zero row per minute.
        let tenant = text::lossy(tenant);
        Ok(sqlx::query_as(THROUGHPUT)
            .bind(tenant.as_ref())
            .bind(minutes as i32)
            .fetch_all(&self.pool)
            .await?)
    }

    /// Every running job of every tenant with the worker holding it, by worker then
    /// job id; at most `limit` (clamped to `1..=10000`). For admins: it spans tenants.
    pub async fn running_jobs(&self, limit: u32) -> Result<Vec<RunningJob>, StoreError> {
        let limit = limit.clamp(1, MAX_RUNNING_JOBS);
        Ok(sqlx::query_as(RUNNING_JOBS)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?)
    }
}
