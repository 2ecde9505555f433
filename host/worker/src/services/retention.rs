//! Retention: prunes finished jobs once per interval across the whole fleet, one host at
//! a time, as its own task off the claim path.
//!
//! Owns: how often this host offers to prune. The store decides whether it may (an
//! advisory lock and a guarded `last_started_at`; see `sluice_store::MaintenanceRun`)
//! and deletes in bounded batches. Must not: block or slow the claim loop, or prune more
//! often than the interval fleet-wide.

use std::time::Duration;

use sluice_store::{MaintenanceRun, RetentionPolicy, Store};
use tracing::{debug, info, warn};

use super::{Service, stagger};
use sluice_shared::metrics::{Metrics, StoreOperation};

/// How retention runs in the fleet.
#[derive(Clone, Debug)]
pub struct RetentionConfig {
    /// Prune at most once per this interval, fleet-wide.
    pub interval: Duration,
    /// Ages and batch size.
    pub policy: RetentionPolicy,
    /// Recorded as the host that ran a prune.
    pub host: String,
}

impl RetentionConfig {
    /// The default of `--retention-interval`.
    pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(3600);

    /// Retention with the default interval and policy, offered as `host` (recorded with
    /// each run, so the fleet sees who pruned).
    pub fn new(host: impl Into<String>) -> Self {
        RetentionConfig {
            interval: Self::DEFAULT_INTERVAL,
            policy: RetentionPolicy::default(),
            host: host.into(),
        }
    }

    /// How often this host offers to prune: a sixth of the interval, between 1 s and
    /// 10 min, so the fleet prunes within a sixth of an interval of it falling due.
    pub fn check_every(&self) -> Duration {
        (self.interval / 6).clamp(Duration::from_secs(1), Duration::from_secs(600))
    }
}

/// The retention service.
pub struct Retention {
    /// Where finished jobs, old schedule slots and registry rows are pruned.
    pub store: Store,
    /// How often, what to keep, and this host's name.
    pub config: RetentionConfig,
    /// Counts failed passes.
    pub metrics: Metrics,
}

impl Service for Retention {
    /// What the store said (`Err`: the database could not be reached; logged).
    type Report = Result<MaintenanceRun, ()>;
    const NAME: &'static str = "retention";

    fn first_wait(&self) -> Duration {
        stagger(self.config.check_every())
    }

    async fn run_once(&mut self) -> Self::Report {
        let config = &self.config;
        let run = self
            .store
            .prune_if_due(&config.policy, config.interval, &config.host)
            .await;
        match &run {
            Ok(MaintenanceRun::Ran(report)) => {
                self.metrics
                    .retention_pruned(report.jobs.deleted, report.schedule_slots);
                info!(
                    jobs_deleted = report.jobs.deleted,
                    completed = report.jobs.completed,
                    dead_or_cancelled = report.jobs.dead,
                    batches = report.jobs.batches,
                    schedule_slots_deleted = report.schedule_slots,
                    worker_rows_deleted = report.workers,
                    webhook_events_deleted = report.webhook_events,
                    flow_keys_deleted = report.flow_keys,
                    usage_rows_deleted = report.usage_rows,
                    "retention: pruned"
                );
            }
            Ok(MaintenanceRun::Busy) => debug!("retention: another host is pruning"),
            Ok(MaintenanceRun::NotDue) => debug!("retention: pruned recently"),
            Err(error) => {
                self.metrics.store_error(StoreOperation::prune);
                warn!(%error, "retention failed; will retry");
            }
        }
        run.map_err(|_| ())
    }

    fn wait_after(&self, _: &Self::Report) -> Duration {
        self.config.check_every()
    }
}
