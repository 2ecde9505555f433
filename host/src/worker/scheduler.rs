//! The scheduler loop: fires due cron slots into the queue. Every `sluice worker` runs
//! one (unless `--no-scheduler`), and `sluice scheduler` runs it alone; any number may
//! run at once because the store fires each slot exactly once.
//!
//! Owns: when to ask the store to fire. It sleeps until the earliest next slot (asked
//! of the database, whose clock decides), at most `idle_interval`, never busy-loops,
//! and logs and retries after errors (a database outage must not end it).
//! Must not: compute slots or read the host clock for slot decisions (the store does,
//! against `now()`), or run on the claim path.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sluice_store::{Store, StoreError};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

/// Shortest sleep between two looks: a due schedule that another host is firing right
/// now is left to it, and looked at again after this long.
const MIN_WAIT: Duration = Duration::from_millis(20);

/// How the scheduler runs.
#[derive(Clone, Debug)]
pub struct SchedulerConfig {
    /// Look at least this often, even when no schedule is due sooner (a schedule created
    /// meanwhile is noticed within this long).
    pub idle_interval: Duration,
    /// Schedules locked per firing transaction.
    pub batch: u32,
    /// Wait after a failed look before the next one.
    pub retry_delay: Duration,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            idle_interval: Duration::from_secs(10),
            batch: 100,
            retry_delay: Duration::from_secs(1),
        }
    }
}

/// What this host's scheduler did, for metrics. The fleet-wide missed-slot counts are
/// per schedule in the store (`ScheduleRecord::skipped_count`).
#[derive(Debug, Default)]
pub struct SchedulerCounters {
    /// Jobs this host enqueued from schedules.
    pub fired: AtomicU64,
    /// Due slots this host skipped (catch-up policy, job type gone).
    pub skipped: AtomicU64,
    /// Failed looks (database errors).
    pub errors: AtomicU64,
}

/// Runs until `shutdown` fires.
pub async fn run(
    store: Store,
    config: SchedulerConfig,
    counters: Arc<SchedulerCounters>,
    shutdown: CancellationToken,
) {
    info!(idle_interval = ?config.idle_interval, "scheduler started");
    loop {
        let wait = match fire_and_wait(&store, &config, &counters).await {
            Ok(wait) => wait,
            Err(error) => {
                counters.errors.fetch_add(1, Ordering::Relaxed);
                warn!(%error, "scheduler: cannot fire schedules; will retry");
                config.retry_delay
            }
        };
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tokio::time::sleep(wait) => {}
        }
    }
    info!("scheduler stopped");
}

/// Fires everything due now, then says how long to sleep.
async fn fire_and_wait(
    store: &Store,
    config: &SchedulerConfig,
    counters: &SchedulerCounters,
) -> Result<Duration, StoreError> {
    loop {
        match store.next_schedule_due_in().await? {
            Some(due_in) if due_in.is_zero() => {}
            Some(due_in) => return Ok(due_in.clamp(MIN_WAIT, config.idle_interval)),
            None => return Ok(config.idle_interval),
        }
        let report = store.fire_due_schedules(config.batch).await?;
        counters
            .fired
            .fetch_add(report.job_ids.len() as u64, Ordering::Relaxed);
        counters
            .skipped
            .fetch_add(report.skipped, Ordering::Relaxed);
        if !report.job_ids.is_empty() || report.skipped > 0 {
            info!(
                schedules = report.schedules,
                jobs = report.job_ids.len(),
                skipped = report.skipped,
                "scheduler: fired due slots"
            );
        }
        if report.schedules == 0 {
            // Due, but every due schedule is locked by another host firing it.
            debug!("scheduler: due schedules are being fired elsewhere");
            return Ok(MIN_WAIT);
        }
        // Loop: more may be due (a full batch), else the next look says how long to sleep.
    }
}
