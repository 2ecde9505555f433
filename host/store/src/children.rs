//! A durable job's follow-up jobs as its guest sees them (issue #43): ids reserved when
//! the guest asks (`jobs.enqueue` returns one before the job exists) and, for
//! `durable.await-jobs`, how the awaited children ended.
//!
//! Owns: drawing ids from the jobs' sequence (`sql/enqueue/reserve_ids.sql`) and reading
//! a parent's children (`sql/waits/child_outcomes.sql`). Must not: insert a job (the
//! completion or the suspension does, under the reserved id, through `enqueue_many_on`),
//! or read a job that is not a child of the given parent.

use std::collections::HashMap;

use crate::types::JobState;
use crate::{Store, StoreError};

/// Draws ids from the jobs' sequence without inserting anything.
const RESERVE_JOB_IDS: &str = include_str!("../sql/enqueue/reserve_ids.sql");

/// The children among some ids, with their state and result.
const CHILD_OUTCOMES: &str = include_str!("../sql/waits/child_outcomes.sql");

/// The most ids [`Store::reserve_job_ids`] reserves at once.
pub const MAX_RESERVED_IDS: usize = 10_000;

/// How one follow-up job stands, for `durable.await-jobs`.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct ChildOutcome {
    /// The child's id.
    pub id: i64,
    /// Its state; finished when it is `completed`, `dead` or `cancelled`.
    pub state: JobState,
    /// Its output when `completed` (possibly empty); `None` otherwise.
    pub output: Option<Vec<u8>>,
    /// Its last error when not `completed` (`None` if it has none).
    pub error: Option<String>,
}

impl Store {
    /// Reserves `n` job ids (at most [`MAX_RESERVED_IDS`]) from the jobs' sequence, in
    /// ascending order, without inserting anything: a follow-up job's id is handed to the
    /// guest when it asks, and the job is inserted under it ([`crate::NewJob::id`]) by
    /// the completion or the suspension, or never (the id then stays unused).
    pub async fn reserve_job_ids(&self, n: usize) -> Result<Vec<i64>, StoreError> {
        if n > MAX_RESERVED_IDS {
            return Err(StoreError::InvalidInput {
                field: "n",
                message: format!("at most {MAX_RESERVED_IDS} ids at once, asked for {n}"),
            });
        }
        if n == 0 {
            return Ok(Vec::new());
        }
        let mut ids: Vec<i64> = sqlx::query_scalar(RESERVE_JOB_IDS)
            .bind(n as i32)
            .fetch_all(&self.pool)
            .await?;
        ids.sort_unstable();
        Ok(ids)
    }

    /// How the jobs `ids` stand that are children of `parent_id` (`parent_id` set by
    /// their insertion as follow-ups), in the order of `ids`; an id that is not one of
    /// its children (another job, another tenant's, a job deleted since) is left out, and
    /// an id listed twice is reported once.
    pub async fn child_outcomes(
        &self,
        parent_id: i64,
        ids: &[i64],
    ) -> Result<Vec<ChildOutcome>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let found: Vec<ChildOutcome> = sqlx::query_as(CHILD_OUTCOMES)
            .bind(parent_id)
            .bind(ids)
            .fetch_all(&self.pool)
            .await?;
        let mut by_id: HashMap<i64, ChildOutcome> = found.into_iter().map(|o| (o.id, o)).collect();
        // Removed as reported: an id listed twice is reported once.
        let ordered = ids.iter().filter_map(|id| by_id.remove(id)).collect();
        Ok(ordered)
    }
}
