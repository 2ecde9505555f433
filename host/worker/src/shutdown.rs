//! Graceful shutdown, after the first SIGTERM/SIGINT: stop claiming, let running attempts
//! finish until the drain deadline, then interrupt the rest (their jobs are released to
//! `pending` without using up the attempt), and give up when the whole budget is spent.
//!
//! Owns the two deadlines. Must not touch the store or the sandbox: the loop in `mod.rs`
//! interrupts attempts, and `attempt.rs` records the releases.

use std::time::Duration;

use tokio::time::{Instant, sleep_until};

/// How long a shutdown may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShutdownTimeouts {
    /// Running attempts may finish for this long after the signal...
    pub drain: Duration,
    /// ...and everything (interrupting, recording releases) must be done within this.
    pub budget: Duration,
}

impl Default for ShutdownTimeouts {
    fn default() -> Self {
        Self {
            drain: Duration::from_secs(10),
            budget: Duration::from_secs(15),
        }
    }
}

/// A shutdown in progress.
#[derive(Debug)]
pub(super) struct Stopping {
    interrupt_at: Instant,
    give_up_at: Instant,
    interrupted: bool,
}

impl Stopping {
    pub(super) fn begin(timeouts: ShutdownTimeouts) -> Self {
        let now = Instant::now();
        Self {
            interrupt_at: now + timeouts.drain.min(timeouts.budget),
            give_up_at: now + timeouts.budget,
            interrupted: false,
        }
    }

    /// Resolves once running attempts should be interrupted (never, once they were).
    pub(super) async fn drain_deadline(&self) {
        if self.interrupted {
            std::future::pending::<()>().await;
        }
        sleep_until(self.interrupt_at).await;
    }

    pub(super) fn mark_interrupted(&mut self) {
        self.interrupted = true;
    }

    /// Resolves when the shutdown budget is spent.
    pub(super) async fn budget_spent(&self) {
        sleep_until(self.give_up_at).await;
    }
}
