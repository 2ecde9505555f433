//! Fleet maintenance runs: retention (finished jobs, old schedule slot records, old rows
//! of the worker registry, old webhook events, idle concurrency keys, old usage rows),
//! once per interval across every host, never two at once.
//!
//! Owns: `sluice.maintenance_runs` and the retention advisory lock. Two guards:
//! - a session advisory lock ([`RETENTION_LOCK_KEY`]) taken with `pg_try_advisory_lock`
//!   on a dedicated connection that is closed (not returned to the pool) when the run
//!   ends or is abandoned, so a crashed or cancelled run can never leave it held;
//! - one guarded upsert on `maintenance_runs.last_started_at`: only the host that moves
//!   it forward runs this interval's prune, the others see `NotDue`.
//!
//! The prune itself runs in bounded batches on the pool (`retention`), one short
//! transaction each, so no long transaction holds back vacuum on the queue table.
//!
//! Must not: run on the claim path, or hold the lock across more than one run.

use std::time::Duration;

use sqlx::{Connection as _, PgConnection};

use crate::{PruneReport, RetentionPolicy, Store, StoreError, micros};

/// `pg_try_advisory_lock` key of the retention run ("sluiceRT" in ASCII).
pub const RETENTION_LOCK_KEY: i64 = 0x736c_7569_6365_5254;

/// What a call to [`Store::prune_if_due`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaintenanceRun {
    /// This host ran the prune.
    Ran(RetentionReport),
    /// Another host is pruning right now (it holds the advisory lock).
    Busy,
    /// Another host already pruned within the interval.
    NotDue,
}

/// Rows one retention run deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetentionReport {
    /// Finished jobs (and, by cascade, their attempts).
    pub jobs: PruneReport,
    /// Schedule slot records older than the completed-job retention.
    pub schedule_slots: u64,
    /// Rows of the worker registry stopped or lost more than [`crate::WORKER_RETENTION`]
    /// ago.
    pub workers: u64,
    /// Webhook events older than the dead-job retention (at least
    /// [`crate::EVENT_RETENTION`]) that no unfinished delivery needs.
    pub webhook_events: u64,
    /// Rows of idle concurrency keys (`sluice.flow_keys`: no job of the key running or
    /// pending, a full token bucket), whatever their age.
    pub flow_keys: u64,
    /// Rows of usage (`sluice.usage_hourly`) of hours older than
    /// [`crate::USAGE_RETENTION`].
    pub usage_rows: u64,
}

/// Takes this interval's run: moves `last_started_at` to now() only if the last run
/// started at least `$2` microseconds ago (or never).
const CLAIM_RUN: &str = include_str!("../sql/maintenance/claim_run.sql");
const FINISH_RUN: &str = include_str!("../sql/maintenance/finish_run.sql");
const TRY_LOCK: &str = include_str!("../sql/maintenance/try_lock.sql");
const UNLOCK: &str = include_str!("../sql/maintenance/unlock.sql");

impl Store {
    /// Prunes finished jobs (and old schedule slot records) if no host did within
    /// `every` and no host is pruning now. `host` is recorded as `started_by`.
    pub async fn prune_if_due(
        &self,
        policy: &RetentionPolicy,
        every: Duration,
        host: &str,
    ) -> Result<MaintenanceRun, StoreError> {
        let every_us = micros("every", every, false)?;
        // A connection of its own: the session lock lives exactly as long as it. Behind
        // a transaction pooler it goes to the direct URL, where a session is a session.
        let mut lock_conn = match &self.direct_url {
            Some(url) => self.direct_connection(url).await?,
            None => PgConnection::connect_with(&*self.pool.connect_options()).await?,
        };
        let locked: bool = sqlx::query_scalar(TRY_LOCK)
            .bind(RETENTION_LOCK_KEY)
            .fetch_one(&mut lock_conn)
            .await?;
        if !locked {
            let _ = lock_conn.close().await;
            return Ok(MaintenanceRun::Busy);
        }
        let result = self.prune_locked(policy, every_us, host).await;
        // Closing the session releases the lock even if the unlock were skipped.
        let _ = sqlx::query(UNLOCK)
            .bind(RETENTION_LOCK_KEY)
            .execute(&mut lock_conn)
            .await;
        let _ = lock_conn.close().await;
        result
    }

    /// One connection to `url` (any form `connect` takes), named like the pool's.
    async fn direct_connection(&self, url: &str) -> Result<PgConnection, StoreError> {
        let options = self.pool.connect_options();
        let name = options
            .get_application_name()
            .unwrap_or(crate::DEFAULT_APPLICATION_NAME);
        let opened = crate::connect::open(url, name, 1, crate::CONNECT_TIMEOUT)
            .await
            .map_err(|e| StoreError::Database(sqlx::Error::Configuration(e.into())))?;
        let conn = opened.pool.acquire().await?.detach();
        opened.pool.close().await;
        Ok(conn)
    }

    async fn prune_locked(
        &self,
        policy: &RetentionPolicy,
        every_us: i64,
        host: &str,
    ) -> Result<MaintenanceRun, StoreError> {
        let claimed: Option<String> = sqlx::query_scalar(CLAIM_RUN)
            .bind("retention")
            .bind(every_us)
            .bind(host)
            .fetch_optional(&self.pool)
            .await?;
        if claimed.is_none() {
            return Ok(MaintenanceRun::NotDue);
        }
        let jobs = self.prune(policy).await?;
        let schedule_slots = self
            .prune_schedule_slots(policy.completed, policy.batch_size)
            .await?;
        let workers = self.prune_workers(crate::WORKER_RETENTION).await?;
        let webhook_events = self
            .prune_webhook_events(policy.dead.max(crate::EVENT_RETENTION), policy.batch_size)
            .await?;
        let flow_keys = self.prune_flow_keys(policy.batch_size).await?;
        let usage_rows = self
            .prune_usage(crate::USAGE_RETENTION, policy.batch_size)
            .await?;
        let total =
            jobs.deleted + schedule_slots + workers + webhook_events + flow_keys + usage_rows;
        sqlx::query(FINISH_RUN)
            .bind("retention")
            .bind(total as i64)
            .execute(&self.pool)
            .await?;
        Ok(MaintenanceRun::Ran(RetentionReport {
            jobs,
            schedule_slots,
            workers,
            webhook_events,
            flow_keys,
            usage_rows,
        }))
    }
}
