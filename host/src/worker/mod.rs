//! The claim loop: claims jobs up to the free slots, runs each attempt as a task,
//! heartbeats the leases it holds, reaps expired leases, and stops on shutdown or, with
//! `--drain`, once nothing runnable remains.
//!
//! Joins the store and the sandbox; reads top to bottom in one `select!`. It never speaks
//! SQL or wasmtime itself, and never decides an attempt's outcome (see `attempt`).

mod attempt;
mod registry;

use std::collections::HashMap;
use std::time::Duration;

use sluice_sandbox::{Limits, Sandbox};
use sluice_store::{ClaimRequest, Lease, Notice, Store};
use tokio::task::JoinSet;
use tokio::time::{Instant, MissedTickBehavior, interval, sleep_until};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

pub use attempt::{Interrupt, Recorded, StopReason};
use registry::Registry;

use crate::metrics::{Metrics, StoreOperation};

/// The shortest wait between two idle looks for work.
const MIN_IDLE_LOOK: Duration = Duration::from_millis(20);

/// How a worker runs; every duration is a parameter so tests never wait for real minutes.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    /// Name recorded in `locked_by` and the attempt history.
    pub worker_id: String,
    /// Attempts run at once.
    pub concurrency: usize,
    /// Visibility timeout: a job whose lease is not renewed for this long is reaped.
    pub lease: Duration,
    /// Only claim jobs of these tenants (`None`: all).
    pub tenants: Option<Vec<String>>,
    /// Exit once nothing is running and no job is due within `drain_horizon`.
    pub drain: bool,
    /// With `drain`, wait for retries and delayed jobs due within this long.
    pub drain_horizon: Duration,
    /// Look for work at least this often even without a notification.
    pub poll_interval: Duration,
    /// Run the reaper this often.
    pub reap_interval: Duration,
    /// Host default limits; job types override them.
    pub limits: Limits,
    /// Where outcomes, sandbox figures and worker health are counted.
    pub metrics: Metrics,
}

impl WorkerConfig {
    pub fn new(worker_id: impl Into<String>) -> Self {
        Self {
            worker_id: worker_id.into(),
            concurrency: 8,
            lease: Duration::from_secs(300),
            tenants: None,
            drain: false,
            drain_horizon: Duration::from_secs(10),
            poll_interval: Duration::from_secs(2),
            reap_interval: Duration::from_secs(15),
            limits: Limits::default(),
            metrics: Metrics::default(),
        }
    }
}

/// Counts of what a worker recorded, printed when it stops.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WorkerSummary {
    pub completed: u64,
    pub retrying: u64,
    pub dead: u64,
    pub cancelled: u64,
    pub released: u64,
    pub dropped: u64,
}

impl WorkerSummary {
    fn count(&mut self, recorded: Recorded) {
        let slot = match recorded {
            Recorded::Completed => &mut self.completed,
            Recorded::Retrying => &mut self.retrying,
            Recorded::Dead => &mut self.dead,
            Recorded::Cancelled => &mut self.cancelled,
            Recorded::Released => &mut self.released,
            Recorded::Dropped => &mut self.dropped,
        };
        *slot += 1;
    }
}

struct Running {
    lease: Lease,
    interrupt: Interrupt,
}

/// Run a worker until `shutdown` fires (running attempts are interrupted and released) or,
/// with `drain`, until nothing runnable remains.
pub async fn run(
    store: Store,
    sandbox: Sandbox,
    config: WorkerConfig,
    shutdown: CancellationToken,
) -> anyhow::Result<WorkerSummary> {
    let registry = Registry::new(store.clone(), sandbox, config.limits.clone());
    let mut listener = match store.listen().await {
        Ok(listener) => Some(listener),
        Err(error) => {
            warn!(%error, "cannot LISTEN for wake-ups; polling every {:?}", config.poll_interval);
            config.metrics.listener_fallback();
            None
        }
    };
    let mut tasks: JoinSet<Recorded> = JoinSet::new();
    let mut running: HashMap<i64, Running> = HashMap::new();
    let mut task_jobs: HashMap<tokio::task::Id, i64> = HashMap::new();
    let mut summary = WorkerSummary::default();
    let mut heartbeat = interval(config.lease / 3);
    heartbeat.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut reaper = interval(config.reap_interval);
    reaper.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut claim_now = true;
    let mut next_look = Instant::now();
    info!(worker = %config.worker_id, concurrency = config.concurrency, "worker started");

    loop {
        if claim_now && !shutdown.is_cancelled() {
            claim_now = false;
            next_look = Instant::now() + config.poll_interval;
            let free = config.concurrency.saturating_sub(running.len());
            if free > 0 {
                let claimed = claim(&store, &config, free).await;
                // A full batch means more may be waiting: look again as soon as a slot frees.
                let idle_slots = claimed.len() < free;
                for job in claimed {
                    let interrupt = Interrupt::default();
                    running.insert(
                        job.id,
                        Running {
                            lease: job.lease,
                            interrupt: interrupt.clone(),
                        },
                    );
                    let job_id = job.id;
                    let task = tasks.spawn(attempt::run_attempt(
                        store.clone(),
                        registry.clone(),
                        job,
                        interrupt,
                        config.lease,
                        config.metrics.clone(),
                    ));
                    task_jobs.insert(task.id(), job_id);
                }
                if idle_slots {
                    // Wake when the next delayed job or retry falls due, not at the next poll.
                    let due_in = next_due_in(&store, &config).await;
                    if let Some(due_in) = due_in {
                        // A job due now that this claim did not get is another worker's:
                        // do not spin on it.
                        next_look = next_look.min(Instant::now() + due_in.max(MIN_IDLE_LOOK));
                    }
                    let nothing_soon = due_in.is_none_or(|d| d > config.drain_horizon);
                    if config.drain && running.is_empty() && nothing_soon {
                        if release_orphans(&store, &config).await == 0 {
                            info!("drained: nothing runnable remains");
                            break;
                        }
                        claim_now = true;
                    }
                } else {
                    claim_now = true;
                }
            }
        }
        if shutdown.is_cancelled() && running.is_empty() {
            break;
        }
        tokio::select! {
            _ = shutdown.cancelled(), if !shutdown.is_cancelled() => {
                info!(running = running.len(), "shutting down: interrupting running attempts");
                for job in running.values() {
                    job.interrupt.stop(StopReason::Shutdown);
                }
            }
            Some(joined) = tasks.join_next_with_id() => {
                // Collect every attempt that has finished, then claim for all freed slots
                // in one statement.
                let mut next = Some(joined);
                while let Some(joined) = next {
                    let task = match &joined {
                        Ok((task, _)) => *task,
                        Err(error) => error.id(),
                    };
                    if let Some(job_id) = task_jobs.remove(&task) {
                        running.remove(&job_id);
                    }
                    match joined {
                        Ok((_, recorded)) => summary.count(recorded),
                        Err(error) => warn!(%error, "attempt task failed; the reaper will return its job"),
                    }
                    next = tasks.try_join_next_with_id();
                }
                claim_now = true;
            }
            notice = recv(&mut listener) => match notice {
                // After a reconnect, notices may have been missed: look now. Missed cancels
                // still arrive with the next heartbeat.
                Some(Notice::JobsAvailable | Notice::Reconnected) => claim_now = true,
                Some(Notice::CancelRequested(id)) => {
                    if let Some(job) = running.get(&id) {
                        job.interrupt.stop(StopReason::Cancelled);
                    }
                }
                None => {
                    warn!("lost the LISTEN connection; polling every {:?}", config.poll_interval);
                    config.metrics.listener_fallback();
                    listener = None;
                }
            },
            _ = heartbeat.tick() => renew_leases(&store, &config, &running).await,
            _ = reaper.tick() => reap(&store, &config.metrics).await,
            _ = sleep_until(next_look), if !claim_now => claim_now = true,
            _ = std::future::ready(()), if claim_now => {}
        }
    }
    info!(?summary, "worker stopped");
    Ok(summary)
}

async fn claim(store: &Store, config: &WorkerConfig, free: usize) -> Vec<sluice_store::ClaimedJob> {
    let request = ClaimRequest {
        worker: config.worker_id.clone(),
        limit: free as u32,
        lease: config.lease,
        tenants: config.tenants.clone(),
        job_types: None,
    };
    match store.claim(&request).await {
        Ok(jobs) => jobs,
        Err(error) => {
            warn!(%error, "claim failed; will look again");
            config.metrics.store_error(StoreOperation::claim);
            Vec::new()
        }
    }
}

/// Time until the earliest pending job of this worker's tenants is due (zero if one is
/// due now); `None` when nothing is pending. A failed look counts as "due soon".
async fn next_due_in(store: &Store, config: &WorkerConfig) -> Option<Duration> {
    match store.next_due_in(config.tenants.as_deref()).await {
        Ok(due) => due,
        Err(error) => {
            warn!(%error, "cannot look for pending jobs; will retry");
            Some(config.poll_interval)
        }
    }
}

/// Release jobs the database says this worker holds although it runs no attempt for
/// them (a claim whose reply was lost, an outcome that could not be written). Called
/// only when the worker runs nothing, so every lease it holds is such an orphan.
async fn release_orphans(store: &Store, config: &WorkerConfig) -> usize {
    let leases = match store.leases_held_by(&config.worker_id).await {
        Ok(leases) => leases,
        Err(error) => {
            warn!(%error, "cannot look for orphaned leases");
            return 0;
        }
    };
    let mut released = 0;
    for lease in leases {
        warn!(
            job_id = lease.job_id,
            "releasing a job this worker held without running it"
        );
        match store
            .release(
                &lease,
                "orphaned: its worker held the lease but ran no attempt",
            )
            .await
        {
            Ok(()) => released += 1,
            Err(error) => warn!(job_id = lease.job_id, %error, "cannot release an orphaned job"),
        }
    }
    released
}

async fn recv(listener: &mut Option<sluice_store::StoreListener>) -> Option<Notice> {
    match listener {
        Some(listener) => listener.recv().await.ok(),
        None => std::future::pending().await,
    }
}

async fn renew_leases(store: &Store, config: &WorkerConfig, running: &HashMap<i64, Running>) {
    if running.is_empty() {
        return;
    }
    let leases: Vec<Lease> = running.values().map(|job| job.lease).collect();
    match store
        .heartbeat(&config.worker_id, &leases, config.lease)
        .await
    {
        Ok(report) => {
            for id in report.lost {
                if let Some(job) = running.get(&id) {
                    warn!(job_id = id, "lease lost; interrupting the attempt");
                    job.interrupt.stop(StopReason::LeaseLost);
                }
            }
            for id in report.cancel_requested {
                if let Some(job) = running.get(&id) {
                    job.interrupt.stop(StopReason::Cancelled);
                }
            }
        }
        Err(error) => {
            warn!(%error, "heartbeat failed; will retry");
            config.metrics.store_error(StoreOperation::heartbeat);
        }
    }
}

async fn reap(store: &Store, metrics: &Metrics) {
    match store.reap(1000).await {
        Ok(reaped) if !reaped.is_empty() => {
            info!(count = reaped.len(), "reaped expired leases");
            reaped.iter().for_each(|job| metrics.lease_expired(job));
        }
        Ok(_) => debug!("reaper: nothing expired"),
        Err(error) => {
            warn!(%error, "reaper failed; will retry");
            metrics.store_error(StoreOperation::reap);
        }
    }
}
