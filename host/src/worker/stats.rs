//! The worker's counters: plain atomics that the loop and its listener bump, for the
//! metrics exporter (and tests) to read. Owns no policy and does no I/O.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Shared with whoever exports metrics: pass the same `Arc` in
/// [`WorkerConfig::stats`](super::WorkerConfig::stats) and read it from anywhere.
#[derive(Debug, Default)]
pub struct WorkerStats {
    /// True while a LISTEN connection is up; false when the worker polls with back-off.
    pub listening: AtomicBool,
    /// Times the worker fell back to polling (LISTEN failed, was lost or is disabled).
    pub polling_fallbacks: AtomicU64,
    /// Times LISTEN came back after a fallback.
    pub listen_recoveries: AtomicU64,
    /// Notifications received (jobs due now or later, cancel requests, reconnects).
    pub notices: AtomicU64,
    /// Claims made because a poll or due-time timer fired rather than a notification.
    pub timed_looks: AtomicU64,
    /// Jobs this worker held in the database without running them, released.
    pub orphans_released: AtomicU64,
    /// Expired leases (of any worker) this worker's reaper took back.
    pub reaped: AtomicU64,
    /// Attempts interrupted by shutdown once the drain deadline passed.
    pub shutdown_interrupts: AtomicU64,
}

impl WorkerStats {
    pub(super) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Reads a counter (for exporters and tests).
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}
