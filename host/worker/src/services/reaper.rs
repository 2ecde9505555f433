//! The reaper: takes back expired leases of any worker (their host died or stalled): the
//! job goes back to pending, or dead on its last attempt, or cancelled if a cancel was
//! pending. Cheap and idempotent, so every worker host runs one.
//!
//! Owns how often this host reaps and what it logs and counts. Must not run on the claim
//! path (a slow reap must never delay a claim) or decide where a reaped job goes (the
//! store's statement does).

use std::time::Duration;

use sluice_store::Store;
use tracing::{debug, info, warn};

use super::Service;
use sluice_shared::metrics::{Metrics, StoreOperation};

/// How the reaper runs.
#[derive(Clone, Debug)]
pub struct ReaperConfig {
    /// Reap this often.
    pub interval: Duration,
    /// Most jobs taken back by one statement (a pass repeats while batches come back full).
    pub batch: u32,
}

impl ReaperConfig {
    /// The default interval of `sluice worker --reap-interval`.
    pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(15);
}

impl Default for ReaperConfig {
    fn default() -> Self {
        ReaperConfig {
            interval: Self::DEFAULT_INTERVAL,
            batch: 1000,
        }
    }
}

/// The reaper service.
pub struct Reaper {
    /// Where expired leases are taken back.
    pub store: Store,
    /// How often, and how many jobs per statement.
    pub config: ReaperConfig,
    /// Counts each job taken back (`lease_expired`) and each failed pass.
    pub metrics: Metrics,
}

/// What one pass did: `None` if the store could not be reached.
#[derive(Debug)]
pub struct ReapReport {
    /// Jobs taken back in this pass; `None` if the store could not be reached.
    pub reaped: Option<usize>,
}

impl Service for Reaper {
    type Report = ReapReport;
    const NAME: &'static str = "reaper";

    /// At once: a host that starts may be replacing one that died.
    fn first_wait(&self) -> Duration {
        Duration::ZERO
    }

    async fn run_once(&mut self) -> ReapReport {
        let mut total = 0;
        loop {
            match self.store.reap(self.config.batch).await {
                Ok(reaped) => {
                    reaped
                        .iter()
                        .for_each(|job| self.metrics.lease_expired(job));
                    total += reaped.len();
                    if reaped.len() < self.config.batch as usize {
                        break;
                    }
                }
                Err(error) => {
                    warn!(%error, "reaper failed; will retry");
                    self.metrics.store_error(StoreOperation::reap);
                    return ReapReport { reaped: None };
                }
            }
        }
        if total > 0 {
            info!(count = total, "reaped expired leases");
        } else {
            debug!("reaper: nothing expired");
        }
        ReapReport {
            reaped: Some(total),
        }
    }

    fn wait_after(&self, _: &ReapReport) -> Duration {
        self.config.interval
    }
}
