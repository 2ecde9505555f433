//! Queue statistics for operators and metrics: how many jobs are in each state per job
//! type, how long the oldest ready job has waited, and how many leases expired lately.
//!
//! Owns: the one read-only statement behind `sluice stats`, `GET /v1/stats` and the
//! database gauges of `/metrics`. Must not: change any row, or read the host clock (ages
//! are measured against the database's `now()`).
//!
//! Cost: the statement aggregates every row of `sluice.jobs` of the tenant (retention
//! bounds that table) and the `lease_expired` attempts of the last hour in
//! `sluice.attempt_history`. It is meant for dashboards and scrapes every few seconds, not for
//! a hot path: the metrics endpoint caches its result.

use chrono::{DateTime, Utc};

use crate::types::JobState;
use crate::validate::validate_tenant_id;
use crate::{Store, StoreError};

/// The whole picture, of one tenant or of all. Totals are the sums of `types`.
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    /// The tenant the figures are scoped to; `None` means every tenant.
    pub tenant: Option<String>,
    /// Database time when the figures were taken.
    pub as_of: DateTime<Utc>,
    /// Jobs per state, summed over `types`.
    pub totals: StateCounts,
    /// Seconds the oldest ready job (pending, `run_at <= now()`) has been waiting since
    /// its `run_at`; `None` when no job is ready.
    pub oldest_ready_age_seconds: Option<f64>,
    /// Attempts the reaper ended because their lease expired (their host died or stalled)
    /// within the last hour.
    pub lease_expirations_last_hour: i64,
    /// One row per (tenant, job type) that is registered or has jobs, by tenant and type.
    pub types: Vec<TypeStats>,
}

/// Jobs per state. `ready` is the part of `pending` that is due now; the rest waits for
/// its `run_at` (a delay or a retry backoff).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StateCounts {
    /// Jobs waiting for a claim, due now or later.
    pub pending: i64,
    /// Pending jobs with `run_at <= now()`: claimable now.
    pub ready: i64,
    /// Jobs held by a worker under a lease.
    pub running: i64,
    /// Durable jobs suspended until a time, a signal or their children (no slot held).
    pub waiting: i64,
    /// Completed jobs not yet pruned by retention.
    pub completed: i64,
    /// Dead jobs (attempts used up, or failed fatally) not yet pruned.
    pub dead: i64,
    /// Cancelled jobs not yet pruned.
    pub cancelled: i64,
}

impl StateCounts {
    /// The count of one state (`ready` is not a state: it is part of `pending`).
    pub fn get(&self, state: JobState) -> i64 {
        match state {
            JobState::Pending => self.pending,
            JobState::Running => self.running,
            JobState::Waiting => self.waiting,
            JobState::Completed => self.completed,
            JobState::Dead => self.dead,
            JobState::Cancelled => self.cancelled,
        }
    }

    fn add(&mut self, other: &StateCounts) {
        self.pending += other.pending;
        self.ready += other.ready;
        self.running += other.running;
        self.waiting += other.waiting;
        self.completed += other.completed;
        self.dead += other.dead;
        self.cancelled += other.cancelled;
    }
}

/// Figures of one job type of one tenant.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeStats {
    /// The tenant the figures are for.
    pub tenant: String,
    /// The job type the figures are for.
    pub job_type: String,
    /// False when jobs of this type exist but the type is no longer registered (the
    /// worker fails them when it claims them).
    pub registered: bool,
    /// Its jobs per state.
    pub counts: StateCounts,
    /// See [`Stats::oldest_ready_age_seconds`].
    pub oldest_ready_age_seconds: Option<f64>,
    /// See [`Stats::lease_expirations_last_hour`].
    pub lease_expirations_last_hour: i64,
    /// The type, or its tenant, is paused (docs/flow-control.md).
    pub paused: bool,
    /// Due jobs each flow control holds back now.
    pub held: HeldCounts,
}

/// Due jobs held back, by the flow control that holds them (a job counts once, under
/// the first that applies: pause, a used-up daily quota of its tenant, the type's cap, its
/// key's cap, a rate limit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeldCounts {
    /// Held by a paused tenant or type.
    pub paused: i64,
    /// Held by a daily quota their tenant used up (docs/usage.md).
    pub quota: i64,
    /// Held by their type's cap.
    pub type_cap: i64,
    /// Held by their concurrency key's cap.
    pub key_cap: i64,
    /// Held by a rate limit (the type's or the key's).
    pub rate: i64,
}

/// One row per (tenant, job type): registered types with their job counts (zero when
/// they have none) and types that only exist in `jobs`. `$1` scopes to a tenant.
const STATS: &str = include_str!("../sql/stats/stats.sql");

#[derive(sqlx::FromRow)]
struct StatsRow {
    tenant: String,
    job_type: String,
    registered: bool,
    pending: i64,
    ready: i64,
    running: i64,
    waiting: i64,
    completed: i64,
    dead: i64,
    cancelled: i64,
    oldest_ready_age_seconds: Option<f64>,
    lease_expirations_last_hour: i64,
    paused: bool,
    held_paused: i64,
    held_quota: i64,
    held_type_cap: i64,
    held_key_cap: i64,
    held_rate: i64,
    as_of: DateTime<Utc>,
}

impl Store {
    /// Queue statistics of one tenant (`Some`) or of every tenant (`None`, for admins
    /// and metrics). An unknown or malformed tenant simply has no jobs: the result is
    /// all zeros, as for a tenant with nothing queued (no existence is revealed).
    #[tracing::instrument(name = "store.stats", level = "debug", skip(self))]
    pub async fn stats(&self, tenant: Option<&str>) -> Result<Stats, StoreError> {
        if let Some(id) = tenant
            && validate_tenant_id(id).is_err()
        {
            return Ok(Stats::from_rows(tenant, self.db_now().await?, Vec::new()));
        }
        let rows: Vec<StatsRow> = sqlx::query_as(STATS)
            .bind(tenant)
            .fetch_all(&self.pool)
            .await?;
        let as_of = match rows.first() {
            Some(row) => row.as_of,
            None => self.db_now().await?,
        };
        Ok(Stats::from_rows(tenant, as_of, rows))
    }
}

impl Stats {
    fn from_rows(tenant: Option<&str>, as_of: DateTime<Utc>, rows: Vec<StatsRow>) -> Stats {
        let types: Vec<TypeStats> = rows
            .into_iter()
            .map(|row| TypeStats {
                tenant: row.tenant,
                job_type: row.job_type,
                registered: row.registered,
                counts: StateCounts {
                    pending: row.pending,
                    ready: row.ready,
                    running: row.running,
                    waiting: row.waiting,
                    completed: row.completed,
                    dead: row.dead,
                    cancelled: row.cancelled,
                },
                oldest_ready_age_seconds: row.oldest_ready_age_seconds.map(|s| s.max(0.0)),
                lease_expirations_last_hour: row.lease_expirations_last_hour,
                paused: row.paused,
                held: HeldCounts {
                    paused: row.held_paused,
                    quota: row.held_quota,
                    type_cap: row.held_type_cap,
                    key_cap: row.held_key_cap,
                    rate: row.held_rate,
                },
            })
            .collect();
        let mut totals = StateCounts::default();
        for t in &types {
            totals.add(&t.counts);
        }
        Stats {
            tenant: tenant.map(str::to_owned),
            as_of,
            totals,
            oldest_ready_age_seconds: types
                .iter()
                .filter_map(|t| t.oldest_ready_age_seconds)
                .reduce(f64::max),
            lease_expirations_last_hour: types.iter().map(|t| t.lease_expirations_last_hour).sum(),
            types,
        }
    }
}
