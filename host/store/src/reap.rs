//! The reaper: running jobs whose lease expired (their host died or stalled) go back to
//! pending, or to dead when that was their last attempt.
//!
//! Owns: the reap statement. Must not: touch a job whose lease is still valid, or read
//! the host clock to decide expiry (only the database's `now()`).

use chrono::{DateTime, Utc};

use crate::history::{archive_attempt, clear_attempt, held_attempt, ran_columns};
use crate::listen::JOBS_CHANNEL;
use crate::types::JobState;
use crate::{Store, StoreError};

/// A job the reaper took back.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct ReapedJob {
    pub id: i64,
    pub tenant: String,
    pub job_type: String,
    /// Pending (attempts left), dead (none left) or cancelled (a cancel was requested).
    pub state: JobState,
    /// The attempt that expired.
    pub attempt: i32,
    pub max_attempts: i32,
    /// The worker that held the lease.
    pub worker: String,
    /// When its lease expired.
    pub locked_until: DateTime<Utc>,
    /// The `last_error` written: "lease expired (held by ... until ...) ...".
    pub error: String,
}

/// Oldest expiries first, SKIP LOCKED so several reapers (one per host) never block each
/// other or a worker finishing the job right now. The attempt is not given back: a job
/// that kills its host must not be retried forever.
const REAP: &str = concat!(
    r#"
WITH held AS (
    SELECT id, locked_by, locked_until, "#,
    held_attempt!(),
    r#"
    FROM sluice.jobs
    WHERE state = 'running' AND locked_until < now()
    ORDER BY locked_until
    LIMIT $1
    FOR UPDATE SKIP LOCKED
),
moved AS (
    UPDATE sluice.jobs j
    SET state = CASE WHEN j.cancel_requested THEN 'cancelled'::sluice.job_state
                     WHEN j.attempt >= j.max_attempts THEN 'dead'
                     ELSE 'pending' END,
        finished_at = CASE WHEN j.cancel_requested OR j.attempt >= j.max_attempts
                           THEN now() END,
        last_error = format('lease expired (held by %s until %s) on attempt %s of %s',
                            h.locked_by,
                            to_char(h.locked_until AT TIME ZONE 'UTC',
                                    'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                            j.attempt, j.max_attempts),
        locked_by = NULL, locked_until = NULL, lease_token = NULL, cancel_requested = false,
        updated_at = now(), "#,
    clear_attempt!(),
    r#"
    FROM held h
    WHERE j.id = h.id AND j.state = 'running' AND j.lease_token = h.lease_token
    RETURNING j.id, j.tenant, j.job_type, j.state, j.attempt, j.max_attempts,
              h.locked_by AS worker, h.locked_until, j.last_error AS error, "#,
    ran_columns!(),
    r#"
),
"#,
    archive_attempt!("'lease_expired'", "m.error", "NULL::int8"),
    r#",
notified AS (
    SELECT pg_notify($2, '') FROM moved WHERE state = 'pending' LIMIT 1
)
SELECT id, tenant, job_type, state, attempt, max_attempts, worker, locked_until, error,
       (SELECT count(*) FROM notified) AS notified
FROM moved
ORDER BY id
"#
);

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
