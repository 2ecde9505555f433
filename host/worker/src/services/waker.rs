//! The waker: moves durable jobs that wait (state `waiting`, docs/durable.md) back to
//! `pending` when what they wait for has come: their wake-up instant is near (they keep
//! it as `run_at`, so the claim takes them on time), a signal they await was sent (the
//! sender usually wakes them itself; this catches a signal that raced the suspension),
//! or every job they await has finished. Cheap (one indexed statement) and idempotent,
//! so every worker host runs one.
//!
//! Must not: run on the claim path, or decide what a wait needs (the store's statement
//! does).

use std::time::Duration;

use sluice_store::Store;
use tracing::{debug, warn};

use super::Service;

/// How the waker runs.
#[derive(Clone, Debug)]
pub struct WakerConfig {
    /// Look this often.
    pub interval: Duration,
    /// Most jobs woken by one statement (a pass repeats while batches come back full).
    pub batch: i64,
}

impl Default for WakerConfig {
    fn default() -> Self {
        WakerConfig {
            interval: Duration::from_secs(1),
            batch: 1000,
        }
    }
}

/// The waker service.
pub struct Waker {
    /// Where waiting jobs are woken.
    pub store: Store,
    /// How often, and how many per statement.
    pub config: WakerConfig,
}

/// What one pass did.
#[derive(Debug)]
pub struct WakeReport {
    /// Jobs woken in this pass; `None` if the store could not be reached.
    pub woken: Option<u64>,
}

impl Service for Waker {
    type Report = WakeReport;
    const NAME: &'static str = "waker";

    fn first_wait(&self) -> Duration {
        super::stagger(self.config.interval)
    }

    async fn run_once(&mut self) -> WakeReport {
        // Timers due within the next two passes are woken now, keeping their `run_at`:
        // the claim then starts them at their instant, not up to a pass late.
        let lookahead = self.config.interval * 2;
        let mut total = 0;
        loop {
            match self.store.wake_waiting(lookahead, self.config.batch).await {
                Ok(woken) => {
                    total += woken;
                    if woken < self.config.batch as u64 {
                        break;
                    }
                }
                Err(error) => {
                    warn!(%error, "waker failed; will retry");
                    return WakeReport { woken: None };
                }
            }
        }
        if total > 0 {
            debug!(count = total, "woke waiting jobs");
        }
        WakeReport { woken: Some(total) }
    }

    fn wait_after(&self, _: &WakeReport) -> Duration {
        self.config.interval
    }
}
