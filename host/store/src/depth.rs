//! Read-only questions about how much work is waiting: when the next pending job falls
//! due (so an idle worker sleeps exactly until then) and how many are pending.
//!
//! Owns: those queries, and the list of leases a worker holds. Must not: change any row.

use std::time::Duration;

use crate::types::Lease;
use crate::{Store, StoreError, text};

const NEXT_DUE: &str = include_str!("../sql/depth/next_due.sql");
const COUNT_PENDING: &str = include_str!("../sql/depth/count_pending.sql");
const HELD_BY: &str = include_str!("../sql/claim/leases_held_by.sql");
const ANALYZE_JOBS: &str = include_str!("../sql/depth/analyze_jobs.sql");

impl Store {
    /// The leases the database says `worker` holds. A worker compares them with the
    /// attempts it is really running to find claims it lost track of.
    pub async fn leases_held_by(&self, worker: &str) -> Result<Vec<Lease>, StoreError> {
        let rows: Vec<(i64, uuid::Uuid)> = sqlx::query_as(HELD_BY)
            .bind(worker)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows
            .into_iter()
            .map(|(job_id, token)| Lease { job_id, token })
            .collect())
    }

    /// Time until the earliest pending job (of these tenants, or of all) is due: zero if
    /// one is due now, `None` if nothing is pending. Database time only.
    pub async fn next_due_in(
        &self,
        tenants: Option<&[String]>,
    ) -> Result<Option<Duration>, StoreError> {
        let seconds: Option<f64> = sqlx::query_scalar(NEXT_DUE)
            .bind(tenants)
            .fetch_one(&self.pool)
            .await?;
        // `try_`: a NaN or infinite answer must not take the worker down.
        Ok(seconds.map(|s| Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::MAX)))
    }

    /// Pending jobs, of one tenant or of all.
    pub async fn count_pending(&self, tenant: Option<&str>) -> Result<i64, StoreError> {
        if !tenant.is_none_or(text::findable) {
            return Ok(0);
        }
        Ok(sqlx::query_scalar(COUNT_PENDING)
            .bind(tenant)
            .fetch_one(&self.pool)
            .await?)
    }

    /// Refreshes the planner's statistics on the jobs table (after a bulk load, so the
    /// next claims are planned for the table as it is).
    pub async fn analyze_jobs(&self) -> Result<(), StoreError> {
        sqlx::query(ANALYZE_JOBS).execute(&self.pool).await?;
        Ok(())
    }
}
