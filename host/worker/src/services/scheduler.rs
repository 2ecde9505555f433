//! The scheduler: fires due cron slots into the queue. Every `sluice worker` runs one
//! (unless `--no-scheduler`), and `sluice scheduler` runs it alone; any number may run at
//! once because the store fires each slot exactly once.
//!
//! Owns: when to ask the store to fire. It sleeps until the earliest next slot (asked of
//! the database, whose clock decides), at most `idle_interval`, never busy-loops, and
//! logs and retries after errors (a database outage must not end it).
//! Must not: compute slots or read the host clock for slot decisions (the store does,
//! against `now()`), or run on the claim path.

use std::time::Duration;

use sluice_store::{Store, StoreError};
use tracing::{debug, info, warn};

use super::Service;
use sluice_shared::metrics::{Metrics, StoreOperation};

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

impl SchedulerConfig {
    /// The default of `--scheduler-interval`.
    pub const DEFAULT_IDLE_INTERVAL: Duration = Duration::from_secs(10);
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            idle_interval: Self::DEFAULT_IDLE_INTERVAL,
            batch: 100,
            retry_delay: Duration::from_secs(1),
        }
    }
}

/// The scheduler service.
pub struct Scheduler {
    /// Where due schedules are locked and fired.
    pub store: Store,
    /// How often to look at least, schedules per transaction, and the wait after a failure.
    pub config: SchedulerConfig,
    /// Counts fired and skipped slots, and failed passes.
    pub metrics: Metrics,
}

/// What one pass did. The fleet-wide missed-slot counts are per schedule in the store
/// (`ScheduleRecord::skipped_count`).
#[derive(Debug)]
pub struct FireReport {
    /// Jobs this pass enqueued from schedules.
    pub fired: u64,
    /// Due slots this pass skipped (catch-up policy, job type gone).
    pub skipped: u64,
    /// How long until the next look; `Err` if the database could not be reached.
    pub next: Result<Duration, ()>,
}

impl Service for Scheduler {
    type Report = FireReport;
    const NAME: &'static str = "scheduler";

    /// Slots are due at fixed times: the first look is at once.
    fn first_wait(&self) -> Duration {
        Duration::ZERO
    }

    async fn run_once(&mut self) -> FireReport {
        let mut report = FireReport {
            fired: 0,
            skipped: 0,
            next: Err(()),
        };
        match fire_due(&self.store, &self.config, &mut report).await {
            Ok(wait) => report.next = Ok(wait),
            Err(error) => {
                self.metrics.store_error(StoreOperation::fire_schedules);
                warn!(%error, "scheduler: cannot fire schedules; will retry");
            }
        }
        self.metrics.schedules_fired(report.fired, report.skipped);
        report
    }

    fn wait_after(&self, report: &FireReport) -> Duration {
        report.next.unwrap_or(self.config.retry_delay)
    }
}

/// Fires everything due now (adding to `report`), then says how long to sleep.
async fn fire_due(
    store: &Store,
    config: &SchedulerConfig,
    report: &mut FireReport,
) -> Result<Duration, StoreError> {
    loop {
        match store.next_schedule_due_in().await? {
            Some(due_in) if due_in.is_zero() => {}
            Some(due_in) => return Ok(due_in.clamp(MIN_WAIT, config.idle_interval)),
            None => return Ok(config.idle_interval),
        }
        let fired = store.fire_due_schedules(config.batch).await?;
        report.fired += fired.job_ids.len() as u64;
        report.skipped += fired.skipped;
        if !fired.job_ids.is_empty() || fired.skipped > 0 {
            info!(
                schedules = fired.schedules,
                jobs = fired.job_ids.len(),
                skipped = fired.skipped,
                "scheduler: fired due slots"
            );
        }
        if fired.schedules == 0 {
            // Due, but every due schedule is locked by another host firing it.
            debug!("scheduler: due schedules are being fired elsewhere");
            return Ok(MIN_WAIT);
        }
        // Loop: more may be due (a full batch), else the next look says how long to sleep.
    }
}
