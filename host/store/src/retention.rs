//! Retention: deletes finished jobs (and, by cascade, their attempt history) once they
//! are older than the policy allows, in bounded batches, off the hot path.
//!
//! Owns: the prune statement. Must not: delete pending or running jobs, or delete an
//! unbounded number of rows in one statement (long transactions bloat the queue table).

use std::time::Duration;

use crate::{Store, StoreError, micros};

/// How long finished jobs are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetentionPolicy {
    /// Completed jobs: default 3 days after they finished.
    pub completed: Duration,
    /// Dead and cancelled jobs: default 30 days.
    pub dead: Duration,
    /// Rows deleted per statement (1..=100 000); default 1000.
    pub batch_size: u32,
}

impl Default for RetentionPolicy {
    fn default() -> Self {
        RetentionPolicy {
            completed: Duration::from_secs(3 * 24 * 3600),
            dead: Duration::from_secs(30 * 24 * 3600),
            batch_size: 1000,
        }
    }
}

/// What a prune deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PruneReport {
    /// Jobs deleted in total.
    pub deleted: u64,
    /// Of which completed.
    pub completed: u64,
    /// Of which dead or cancelled.
    pub dead: u64,
    /// Statements run.
    pub batches: u32,
}

/// One batch: completed jobs first, then dead/cancelled ones to fill it (see the file).
const PRUNE_BATCH: &str = include_str!("../sql/retention/prune_batch.sql");

impl Store {
    /// Deletes at most `policy.batch_size` expired jobs in one statement.
    pub async fn prune_batch(&self, policy: &RetentionPolicy) -> Result<PruneReport, StoreError> {
        if policy.batch_size == 0 || policy.batch_size > 100_000 {
            return Err(StoreError::InvalidInput {
                field: "batch_size",
                message: format!("must be 1 to 100000, got {}", policy.batch_size),
            });
        }
        let (completed, dead): (i64, i64) = sqlx::query_as(PRUNE_BATCH)
            .bind(micros("retention.completed", policy.completed, false)?)
            .bind(micros("retention.dead", policy.dead, false)?)
            .bind(i64::from(policy.batch_size))
            .fetch_one(&self.pool)
            .await?;
        Ok(PruneReport {
            deleted: (completed + dead) as u64,
            completed: completed as u64,
            dead: dead as u64,
            batches: 1,
        })
    }

    /// Deletes every expired job, one batch per statement, until a batch comes back
    /// short.
    #[tracing::instrument(name = "store.prune", level = "debug", skip_all)]
    pub async fn prune(&self, policy: &RetentionPolicy) -> Result<PruneReport, StoreError> {
        let mut total = PruneReport::default();
        loop {
            let batch = self.prune_batch(policy).await?;
            total.deleted += batch.deleted;
            total.completed += batch.completed;
            total.dead += batch.dead;
            total.batches += 1;
            if batch.deleted < u64::from(policy.batch_size) {
                return Ok(total);
            }
        }
    }
}
