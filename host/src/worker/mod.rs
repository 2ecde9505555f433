//! The claim loop: claims jobs up to the free slots, runs each attempt as a task, keeps
//! its leases, and stops on shutdown (draining first) or, with `--drain`, once nothing
//! runnable remains.
//!
//! Joins the store and the sandbox; reads top to bottom in one `select!`. It never speaks
//! SQL or wasmtime itself, and never decides an attempt's outcome (see `attempt`). When to
//! look for work is `wakeup`'s business, shutdown deadlines are `shutdown`'s, heartbeats,
//! orphans and the reaper are `leases`'.

mod attempt;
mod completions;
mod leases;
pub mod maintenance;
mod registry;
pub mod scheduler;
mod shutdown;
mod stats;
mod wakeup;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use sluice_sandbox::{Limits, Sandbox};
use sluice_store::{ClaimRequest, ClaimedJob, Lease, Notice, Store};
use tokio::task::JoinSet;
use tokio::time::{Instant, MissedTickBehavior, interval, sleep_until};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

pub use attempt::{Interrupt, Recorded, StopReason};
use registry::Registry;

use crate::metrics::{Metrics, StoreOperation};
pub use shutdown::ShutdownTimeouts;
use shutdown::Stopping;
pub use stats::WorkerStats;
pub use wakeup::{IdlePolicy, Listen};
use wakeup::{IdleSchedule, Wake, Wakeups};

/// The shortest wait between two idle looks for work.
const MIN_IDLE_LOOK: Duration = Duration::from_millis(20);

/// How a worker runs; every duration is a parameter so tests never wait for real minutes.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    /// Name recorded in `locked_by` and the attempt history. Unique among live workers:
    /// a worker releases any job held under its name that it does not run.
    pub worker_id: String,
    /// Attempts run at once.
    pub concurrency: usize,
    /// Visibility timeout: a job whose lease is not renewed for this long is reaped.
    /// Renewed every third of it.
    pub lease: Duration,
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
    /// Run the reaper this often.
    pub reap_interval: Duration,
    /// How long a graceful shutdown may take.
    pub shutdown: ShutdownTimeouts,
    /// Host default limits; job types override them.
    pub limits: Limits,
    /// Counters for metrics; share the `Arc` to read them.
    pub stats: Arc<WorkerStats>,
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
            listen: Listen::Pool,
            idle: IdlePolicy::default(),
            reap_interval: Duration::from_secs(15),
            shutdown: ShutdownTimeouts::default(),
            limits: Limits::default(),
            stats: Arc::default(),
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
    /// Attempts still unrecorded when the shutdown budget ran out: their jobs come back
    /// when their lease expires. Zero after a clean shutdown.
    pub abandoned: u64,
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

/// The attempts in flight: their tasks and, by job id, their leases and interrupts.
#[derive(Default)]
struct Slots {
    tasks: JoinSet<Recorded>,
    running: HashMap<i64, Running>,
    task_jobs: HashMap<tokio::task::Id, i64>,
}

impl Slots {
    fn start(
        &mut self,
        store: &Store,
        completions: &completions::Completions,
        registry: &Arc<Registry>,
        job: ClaimedJob,
        lease: Duration,
        metrics: &Metrics,
    ) {
        let interrupt = Interrupt::default();
        let job_id = job.id;
        self.running.insert(
            job_id,
            Running {
                lease: job.lease,
                interrupt: interrupt.clone(),
            },
        );
        let task = self.tasks.spawn(attempt::run_attempt(
            store.clone(),
            completions.clone(),
            registry.clone(),
            job,
            interrupt,
            lease,
            metrics.clone(),
        ));
        self.task_jobs.insert(task.id(), job_id);
    }

    /// Books every attempt task that has finished, starting with `first`.
    fn collect(
        &mut self,
        first: Result<(tokio::task::Id, Recorded), tokio::task::JoinError>,
        summary: &mut WorkerSummary,
    ) {
        let mut next = Some(first);
        while let Some(joined) = next {
            let task = match &joined {
                Ok((task, _)) => *task,
                Err(error) => error.id(),
            };
            if let Some(job_id) = self.task_jobs.remove(&task) {
                self.running.remove(&job_id);
            }
            match joined {
                Ok((_, recorded)) => summary.count(recorded),
                Err(error) => {
                    warn!(%error, "attempt task failed; the orphan check will release its job")
                }
            }
            next = self.tasks.try_join_next_with_id();
        }
    }

    fn interrupt_all(&self, reason: StopReason) {
        for job in self.running.values() {
            job.interrupt.stop(reason);
        }
    }
}

/// Run a worker until `shutdown` fires (drain, then interrupt and release what still
/// runs) or, with `drain`, until nothing runnable remains.
pub async fn run(
    store: Store,
    sandbox: Sandbox,
    config: WorkerConfig,
    shutdown: CancellationToken,
) -> anyhow::Result<WorkerSummary> {
    let registry = Registry::new(store.clone(), sandbox, config.limits.clone());
    let completions = completions::Completions::start(store.clone(), config.lease);
    let stats = config.stats.clone();
    let mut wakeups = Wakeups::start(&store, &config.listen, stats.clone());
    let mut idle = IdleSchedule::new(config.idle);
    let mut slots = Slots::default();
    let mut summary = WorkerSummary::default();
    let heartbeat_every = config.lease / 3;
    let mut next_heartbeat = Instant::now() + heartbeat_every;
    let mut reaper = interval(config.reap_interval);
    reaper.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut stopping: Option<Stopping> = None;
    let mut claim_now = true;
    let mut next_look = Instant::now();
    info!(worker = %config.worker_id, concurrency = config.concurrency, "worker started");

    loop {
        if claim_now && stopping.is_none() {
            claim_now = false;
            let free = config.concurrency.saturating_sub(slots.running.len());
            if free > 0 {
                let claimed = claim(&store, &config, free).await;
                let Ok(claimed) = claimed else {
                    next_look = Instant::now() + idle.retry_after_error();
                    continue;
                };
                if !claimed.is_empty() {
                    idle.reset();
                }
                // A full batch means more may be waiting: look again as soon as a slot
                // frees (every finished attempt sets `claim_now`).
                let idle_slots = claimed.len() < free;
                for job in claimed {
                    slots.start(
                        &store,
                        &completions,
                        &registry,
                        job,
                        config.lease,
                        &config.metrics,
                    );
                }
                if idle_slots {
                    next_look = Instant::now() + idle.next_wait(wakeups.listening());
                    // Wake when the next delayed job or retry falls due, not at the next poll.
                    let due_in = next_due_in(&store, &config, &idle).await;
                    if let Some(due_in) = due_in {
                        // A job due now that this claim did not get is another worker's:
                        // do not spin on it.
                        next_look = next_look.min(Instant::now() + due_in.max(MIN_IDLE_LOOK));
                    }
                    let nothing_soon = due_in.is_none_or(|d| d > config.drain_horizon);
                    if config.drain && slots.running.is_empty() && nothing_soon {
                        let empty = HashMap::new();
                        if leases::release_orphans(&store, &config, &empty).await == 0 {
                            info!("drained: nothing runnable remains");
                            break;
                        }
                        claim_now = true;
                    }
                }
            }
        }
        if stopping.is_some() && slots.running.is_empty() {
            info!("shutdown: every attempt finished or was released");
            break;
        }
        tokio::select! {
            _ = shutdown.cancelled(), if stopping.is_none() => {
                info!(
                    running = slots.running.len(),
                    "shutting down: no more claims; running attempts may finish within {:?}",
                    config.shutdown.drain
                );
                stopping = Some(Stopping::begin(config.shutdown));
            }
            _ = async { stopping.as_ref().expect("guarded").drain_deadline().await }, if stopping.is_some() => {
                let stop = stopping.as_mut().expect("guarded");
                stop.mark_interrupted();
                warn!(running = slots.running.len(), "drain deadline passed: interrupting attempts and releasing their jobs");
                WorkerStats::add(&stats.shutdown_interrupts, slots.running.len() as u64);
                slots.interrupt_all(StopReason::Shutdown);
            }
            _ = async { stopping.as_ref().expect("guarded").budget_spent().await }, if stopping.is_some() => {
                summary.abandoned = slots.running.len() as u64;
                warn!(abandoned = summary.abandoned, "shutdown budget spent: leaving the remaining jobs to the reaper");
                slots.tasks.abort_all();
                break;
            }
            Some(joined) = slots.tasks.join_next_with_id() => {
                // Collect every attempt that has finished, then claim for all freed slots
                // in one statement.
                slots.collect(joined, &mut summary);
                claim_now = true;
            }
            wake = wakeups.recv() => match wake {
                Wake::Notice(Notice::JobsAvailable | Notice::Reconnected) | Wake::ListenBack => {
                    claim_now = true;
                }
                Wake::Notice(Notice::JobsDueIn(due_in)) => {
                    next_look = next_look.min(Instant::now() + due_in);
                }
                Wake::Notice(Notice::CancelRequested(id)) => {
                    if let Some(job) = slots.running.get(&id) {
                        job.interrupt.stop(StopReason::Cancelled);
                    }
                }
                Wake::ListenLost => {
                    config.metrics.listener_fallback();
                    idle.reset();
                    claim_now = true;
                }
            },
            _ = sleep_until(next_heartbeat) => {
                next_heartbeat = if leases::renew(&store, &config, &slots.running).await {
                    leases::release_orphans(&store, &config, &slots.running).await;
                    Instant::now() + heartbeat_every
                } else {
                    Instant::now() + leases::heartbeat_retry(&config)
                };
            }
            _ = reaper.tick() => leases::reap(&store, &config).await,
            _ = sleep_until(next_look), if !claim_now && stopping.is_none() => {
                WorkerStats::bump(&stats.timed_looks);
                claim_now = true;
            }
            _ = std::future::ready(()), if claim_now && stopping.is_none() => {}
        }
    }
    info!(?summary, "worker stopped");
    Ok(summary)
}

/// Claims up to `free` jobs; an error is logged and means "look again soon".
async fn claim(store: &Store, config: &WorkerConfig, free: usize) -> Result<Vec<ClaimedJob>, ()> {
    let request = ClaimRequest {
        worker: config.worker_id.clone(),
        limit: free as u32,
        lease: config.lease,
        tenants: config.tenants.clone(),
        job_types: None,
    };
    store.claim(&request).await.map_err(|error| {
        warn!(%error, "claim failed; will look again");
        config.metrics.store_error(StoreOperation::claim);
    })
}

/// Time until the earliest pending job of this worker's tenants is due (zero if one is
/// due now); `None` when nothing is pending. A failed look counts as "due soon".
async fn next_due_in(
    store: &Store,
    config: &WorkerConfig,
    idle: &IdleSchedule,
) -> Option<Duration> {
    match store.next_due_in(config.tenants.as_deref()).await {
        Ok(due) => due,
        Err(error) => {
            warn!(%error, "cannot look for pending jobs; will retry");
            Some(idle.retry_after_error())
        }
    }
}
