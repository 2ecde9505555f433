//! The worker's configuration ([`WorkerConfig`]) and what it reports when it stops
//! ([`WorkerSummary`]). Near the bottom of the worker's layers: the modules above may
//! import it; it imports only the option types it holds (`prefetch`, `wakeup`,
//! `shutdown`) and the completer's `Recorded`, which the summary counts.

use std::time::Duration;

use sluice_sandbox::Limits;
use sluice_store::AttemptOutcome;

use super::completer::Recorded;
use super::prefetch::Prefetch;
use super::shutdown::ShutdownTimeouts;
use super::wakeup::{IdlePolicy, Listen};
use sluice_shared::metrics::Metrics;

/// How a worker runs; every duration is a parameter so tests never wait for real minutes.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    /// Name recorded in `locked_by` and the attempt history. Unique among live workers:
    /// a worker releases any job held under its name that it does not run.
    pub worker_id: String,
    /// Attempts run at once.
    pub concurrency: usize,
    /// Attempts run beyond `concurrency`, each only for a job whose tenant has nothing
    /// executing on this worker: a tenant arriving beside a flood that holds every slot
    /// starts at once instead of waiting for one of the flood's attempts to end
    /// (docs/fairness.md). A claim for one asks only for such tenants' jobs. 0: none.
    pub spare_slots: usize,
    /// Jobs claimed ahead of free slots and queued locally, so slots refill without
    /// waiting for a claim round-trip. They hold leases (heartbeated, released on
    /// shutdown). `Auto` (the default) sizes the queue from the completion rate and
    /// the claim round trip; `Fixed(0)` claims only for free slots.
    pub prefetch: Prefetch,
    /// Visibility timeout: a job whose lease is not renewed for this long is reaped.
    /// Renewed every third of it (of `prefetch_lease` when that is shorter).
    pub lease: Duration,
    /// With `prefetch`, the lease a claim takes and a job keeps while it waits in the
    /// queue, so the queue of a worker that dies comes back this soon. A job that
    /// starts is renewed to `lease` by the next heartbeat.
    pub prefetch_lease: Duration,
    /// Only claim jobs of these tenants (`None`: all).
    pub tenants: Option<Vec<String>>,
    /// Exit once nothing is running and no job is due within `drain_horizon`.
    pub drain: bool,
    /// With `drain`, wait for retries and delayed jobs due within this long.
    pub drain_horizon: Duration,
    /// Where to LISTEN for wake-ups.
    pub listen: Listen,
    /// When to look for work without a notification.
    pub idle: IdlePolicy,
    /// How long a graceful shutdown may take.
    pub shutdown: ShutdownTimeouts,
    /// Host default limits; job types override them.
    pub limits: Limits,
    /// Where outcomes, sandbox figures and worker health are counted.
    pub metrics: Metrics,
    /// The operator's secrets keys (`None`: none; types granted secrets are not claimed).
    pub secrets: Option<sluice_secrets::Keyring>,
    /// Where attempt spans go (docs/observability.md); disabled by default. Jobs that
    /// carry a trace context continue it whether or not this exports.
    pub tracer: sluice_trace::Tracer,
}

impl WorkerConfig {
    /// Attempts that may execute at once: `concurrency` and the spare slots (the
    /// sandbox must have room for as many).
    pub fn max_executing(&self) -> usize {
        self.concurrency + self.spare_slots
    }

    /// The lease a claim takes: the prefetch lease when prefetching (the claimed jobs
    /// may wait in the queue), else the full lease.
    pub fn claim_lease(&self) -> Duration {
        if self.prefetch.may_queue() {
            self.prefetch_lease.min(self.lease)
        } else {
            self.lease
        }
    }

    /// A worker named `worker_id` with the defaults: 8 slots and 1 spare, automatic
    /// prefetch, a 5 min lease (30 s while prefetched), every tenant, no drain, the
    /// sandbox's default limits and no secrets key.
    pub fn new(worker_id: impl Into<String>) -> Self {
        Self {
            worker_id: worker_id.into(),
            concurrency: 8,
            spare_slots: 1,
            prefetch: Prefetch::Auto,
            lease: Duration::from_secs(300),
            prefetch_lease: Duration::from_secs(30),
            tenants: None,
            drain: false,
            drain_horizon: Duration::from_secs(10),
            listen: Listen::Pool,
            idle: IdlePolicy::default(),
            shutdown: ShutdownTimeouts::default(),
            limits: Limits::default(),
            metrics: Metrics::default(),
            secrets: None,
            tracer: sluice_trace::Tracer::disabled(),
        }
    }
}

/// Counts of what a worker recorded, printed when it stops.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WorkerSummary {
    /// Attempts the store recorded as completed.
    pub completed: u64,
    /// Failed attempts whose job went back to pending for another attempt.
    pub retrying: u64,
    /// Failed attempts whose job died (attempts used up, or fatal).
    pub dead: u64,
    /// Attempts that ended cancelled (an operator's cancel).
    pub cancelled: u64,
    /// Attempts given back unused (shutdown, infrastructure failure, not runnable here).
    pub released: u64,
    /// Attempts nothing was recorded for: the lease was lost (reaped, claimed again) or the
    /// database stayed unreachable past it.
    pub dropped: u64,
    /// Attempts still unrecorded when the shutdown budget ran out: their jobs come back
    /// when their lease expires. Zero after a clean shutdown.
    pub abandoned: u64,
}

impl WorkerSummary {
    pub(super) fn count(&mut self, recorded: Recorded) {
        let slot = match recorded {
            Some(AttemptOutcome::Completed) => &mut self.completed,
            Some(AttemptOutcome::Retry) => &mut self.retrying,
            Some(AttemptOutcome::Dead) => &mut self.dead,
            Some(AttemptOutcome::Cancelled) => &mut self.cancelled,
            // A suspension gives the attempt back too (counted apart once the worker
            // suspends runs: issue #43).
            Some(AttemptOutcome::Released | AttemptOutcome::Suspended) => &mut self.released,
            // The worker never records an expiry; the reaper does.
            Some(AttemptOutcome::LeaseExpired) | None => &mut self.dropped,
        };
        *slot += 1;
    }
}

/// The CPUs this process may run on (2 when the count cannot be read).
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// Guest threads when `--guest-threads` is not given: one per CPU, less one when the
/// database runs on this machine, so that busy guests never hold every CPU while
/// PostgreSQL waits for one (issue #44; measured in docs/fairness.md, 2026-12-05).
pub fn default_guest_threads(cpus: usize, database_here: bool) -> usize {
    if database_here && cpus > 1 {
        cpus - 1
    } else {
        cpus.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guest_threads_leave_a_local_database_one_cpu_by_default() {
        assert_eq!(default_guest_threads(2, true), 1);
        assert_eq!(default_guest_threads(8, true), 7);
        assert_eq!(default_guest_threads(1, true), 1);
        assert_eq!(default_guest_threads(2, false), 2);
        assert_eq!(default_guest_threads(8, false), 8);
    }
}
