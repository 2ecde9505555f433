//! Fleet maintenance: retention (pruning finished jobs) once per interval across the
//! whole fleet, one host at a time, as its own task off the claim path.
//!
//! Owns: how often this host offers to prune. The store decides whether it may (an
//! advisory lock and a guarded `last_started_at`; see `sluice_store::MaintenanceRun`)
//! and deletes in bounded batches. Must not: block or slow the claim loop, or prune
//! more often than the interval fleet-wide.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sluice_store::{MaintenanceRun, RetentionPolicy, Store};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

/// How retention runs in the fleet.
#[derive(Clone, Debug)]
pub struct MaintenanceConfig {
    /// Prune at most once per this interval, fleet-wide (default 1 h).
    pub interval: Duration,
    /// Ages and batch size.
    pub policy: RetentionPolicy,
    /// Recorded as the host that ran a prune.
    pub host: String,
}

impl MaintenanceConfig {
    pub fn new(host: impl Into<String>) -> Self {
        MaintenanceConfig {
            interval: Duration::from_secs(3600),
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

/// What this host's retention runs deleted, for metrics.
#[derive(Debug, Default)]
pub struct MaintenanceCounters {
    /// Jobs deleted (their attempts go with them).
    pub jobs_deleted: AtomicU64,
    /// Schedule slot records deleted.
    pub schedule_slots_deleted: AtomicU64,
    /// Prunes this host ran.
    pub runs: AtomicU64,
    /// Failed runs.
    pub errors: AtomicU64,
}

/// Runs until `shutdown` fires. The first offer comes after a random part of the check
/// period, so hosts started together do not all ask at once.
pub async fn run(
    store: Store,
    config: MaintenanceConfig,
    counters: Arc<MaintenanceCounters>,
    shutdown: CancellationToken,
) {
    let check = config.check_every();
    let mut wait = check.mul_f64(rand::random::<f64>());
    info!(interval = ?config.interval, "retention started");
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tokio::time::sleep(wait) => {}
        }
        wait = check;
        // Stop promptly on shutdown: an abandoned prune closes its lock connection and
        // every finished batch is already committed.
        let run = tokio::select! {
            _ = shutdown.cancelled() => break,
            run = store.prune_if_due(&config.policy, config.interval, &config.host) => run,
        };
        match run {
            Ok(MaintenanceRun::Ran(report)) => {
                counters.runs.fetch_add(1, Ordering::Relaxed);
                counters
                    .jobs_deleted
                    .fetch_add(report.jobs.deleted, Ordering::Relaxed);
                counters
                    .schedule_slots_deleted
                    .fetch_add(report.schedule_slots, Ordering::Relaxed);
                info!(
                    jobs_deleted = report.jobs.deleted,
                    completed = report.jobs.completed,
                    dead_or_cancelled = report.jobs.dead,
                    batches = report.jobs.batches,
                    schedule_slots_deleted = report.schedule_slots,
                    "retention: pruned"
                );
            }
            Ok(MaintenanceRun::Busy) => debug!("retention: another host is pruning"),
            Ok(MaintenanceRun::NotDue) => debug!("retention: pruned recently"),
            Err(error) => {
                counters.errors.fetch_add(1, Ordering::Relaxed);
                warn!(%error, "retention failed; will retry");
            }
        }
    }
    info!("retention stopped");
}
