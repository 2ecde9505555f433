//! The claim loop: claims jobs up to the free slots, runs each attempt as a task, keeps
//! its leases, and stops on shutdown (draining first) or, with `--drain`, once nothing
//! runnable remains.
//!
//! Joins the store and the sandbox; reads top to bottom in one `select!`. It never speaks
//! SQL or wasmtime itself, and never decides an attempt's outcome (see `executor`) or writes it (`completer`). When to
//! look for work is `wakeup`'s business, shutdown deadlines are `shutdown`'s, heartbeats,
//! orphans and the reaper are `leases`'.

mod completer;
mod executor;
mod leases;
pub mod maintenance;
mod registry;
pub mod scheduler;
mod shutdown;
mod slots;
mod stats;
mod wakeup;

use std::sync::Arc;
use std::time::Duration;

use sluice_sandbox::{Limits, Sandbox};
use sluice_store::{AttemptOutcome, ClaimRequest, ClaimedJob, Notice, Store};
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior, interval, sleep_until};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use completer::Completer;
pub use completer::Recorded;
use executor::AttemptContext;
pub use executor::{Interrupt, StopReason};
use registry::Registry;

use crate::metrics::{Metrics, StoreOperation};
pub use shutdown::ShutdownTimeouts;
use shutdown::Stopping;
use slots::{SlotEvent, Slots};
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
    /// Jobs claimed ahead of free slots and queued locally, so slots refill without
    /// waiting for a claim round-trip. They hold leases (heartbeated, released on
    /// shutdown); 0 claims only for free slots.
    pub prefetch: usize,
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
    /// The lease a claim takes: the prefetch lease when prefetching (the claimed jobs
    /// may wait in the queue), else the full lease.
    pub fn claim_lease(&self) -> Duration {
        if self.prefetch > 0 {
            self.prefetch_lease.min(self.lease)
        } else {
            self.lease
        }
    }

    pub fn new(worker_id: impl Into<String>) -> Self {
        Self {
            worker_id: worker_id.into(),
            concurrency: 8,
            prefetch: 0,
            lease: Duration::from_secs(300),
            prefetch_lease: Duration::from_secs(30),
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
            Some(AttemptOutcome::Completed) => &mut self.completed,
            Some(AttemptOutcome::Retry) => &mut self.retrying,
            Some(AttemptOutcome::Dead) => &mut self.dead,
            Some(AttemptOutcome::Cancelled) => &mut self.cancelled,
            Some(AttemptOutcome::Released) => &mut self.released,
            // The worker never records an expiry; the reaper does.
            Some(AttemptOutcome::LeaseExpired) | None => &mut self.dropped,
        };
        *slot += 1;
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
    let ctx = AttemptContext {
        completer: Completer::start(store.clone(), config.lease),
        registry: Registry::new(store.clone(), sandbox, config.limits.clone()),
        metrics: config.metrics.clone(),
    };
    let stats = config.stats.clone();
    let mut wakeups = Wakeups::start(&store, &config.listen, stats.clone());
    let mut idle = IdleSchedule::new(config.idle);
    let mut slots = Slots::new();
    let mut summary = WorkerSummary::default();
    let heartbeat_every = config.claim_lease() / 3;
    let mut next_heartbeat = Instant::now() + heartbeat_every;
    let mut reaper = interval(config.reap_interval);
    reaper.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut stopping: Option<Stopping> = None;
    let mut claim_now = true;
    // The last claim came back full, so more jobs may be waiting: finishing attempts then
    // claim again at once. After a short claim, only a notification, a timed look or a
    // due job does (or, with `--drain`, the last attempt ending): a quiet queue costs one
    // claim per job, not one per finished attempt.
    let mut backlog = true;
    // The claim in flight and how many jobs it asked for: claims run beside the loop, so
    // finished attempts keep being collected and queued jobs keep starting meanwhile.
    let mut claiming: Option<(usize, ClaimInFlight)> = None;
    let mut next_look = Instant::now();
    // Two timers kept across iterations and reset only when their deadline moves: the
    // loop turns once per finished attempt, and a fresh `Sleep` per turn showed up as a
    // tenth of the worker's CPU under load.
    let heartbeat_timer = sleep_until(next_heartbeat);
    let look_timer = sleep_until(next_look);
    tokio::pin!(heartbeat_timer, look_timer);
    info!(worker = %config.worker_id, concurrency = config.concurrency, prefetch = config.prefetch, "worker started");

    loop {
        if claim_now && stopping.is_none() && claiming.is_none() {
            claim_now = false;
            let wanted = slots.wanted(&config);
            if wanted > 0 {
                claiming = Some((
                    wanted,
                    tokio::spawn(claim(store.clone(), config.clone(), wanted)),
                ));
            } else {
                // Slots and queue are full: the next finished attempt asks for a claim.
                // Without this, a look time already past would fire on every turn.
                next_look = Instant::now() + config.idle.safety_poll;
            }
        }
        if stopping.is_some() && slots.is_empty() && claiming.is_none() {
            info!("shutdown: every attempt finished or was released");
            break;
        }
        if heartbeat_timer.deadline() != next_heartbeat {
            heartbeat_timer.as_mut().reset(next_heartbeat);
        }
        if look_timer.deadline() != next_look {
            look_timer.as_mut().reset(next_look);
        }
        tokio::select! {
            _ = shutdown.cancelled(), if stopping.is_none() => {
                info!(
                    running = slots.held(),
                    "shutting down: no more claims; running attempts may finish within {:?}",
                    config.shutdown.drain
                );
                stopping = Some(Stopping::begin(config.shutdown));
                slots.release_queued(&ctx);
            }
            _ = async { stopping.as_ref().expect("guarded").drain_deadline().await }, if stopping.is_some() => {
                let stop = stopping.as_mut().expect("guarded");
                stop.mark_interrupted();
                warn!(running = slots.held(), "drain deadline passed: interrupting attempts and releasing their jobs");
                WorkerStats::add(&stats.shutdown_interrupts, slots.held() as u64);
                slots.interrupt_all(StopReason::Shutdown);
            }
            _ = async { stopping.as_ref().expect("guarded").budget_spent().await }, if stopping.is_some() => {
                summary.abandoned = slots.held() as u64;
                warn!(abandoned = summary.abandoned, "shutdown budget spent: leaving the remaining jobs to the reaper");
                slots.abort_all();
                break;
            }
            event = slots.next_event() => {
                match event {
                    // Slots freed: start queued jobs now, and top the queue up.
                    SlotEvent::Ran(job_id) => {
                        slots.ran(job_id);
                        if stopping.is_none() {
                            slots.start_queued(&ctx, config.concurrency);
                        }
                    }
                    SlotEvent::Joined(joined) => {
                        slots.collect(joined, &mut summary);
                        if stopping.is_none() {
                            slots.start_queued(&ctx, config.concurrency);
                        }
                    }
                }
                claim_now |= backlog || (config.drain && slots.is_empty());
            }
            claimed = async { (&mut claiming.as_mut().expect("guarded").1).await }, if claiming.is_some() => {
                let (wanted, _) = claiming.take().expect("guarded");
                let claimed = match claimed {
                    Ok(Ok(claimed)) => claimed,
                    Ok(Err(())) | Err(_) => {
                        backlog = true;
                        next_look = Instant::now() + idle.retry_after_error();
                        continue;
                    }
                };
                if !claimed.is_empty() {
                    idle.reset();
                }
                // A full batch means more may be waiting: claim again as slots free.
                let short = claimed.len() < wanted;
                backlog = !short;
                claimed.into_iter().for_each(|job| slots.hold(job));
                if stopping.is_some() {
                    slots.release_queued(&ctx);
                    continue;
                }
                slots.start_queued(&ctx, config.concurrency);
                if short {
                    if after_short_claim(&store, &config, &mut idle, wakeups.listening(), &slots, &ctx.completer, &mut next_look).await {
                        break;
                    }
                } else {
                    claim_now = true;
                }
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
            () = &mut heartbeat_timer => {
                next_heartbeat = if leases::renew(&store, &config, &slots.running).await {
                    // The orphan check compares the database with `running`, which is
                    // incomplete while a claim is in flight: skip it until the next beat.
                    if claiming.is_none() {
                        leases::release_orphans(&store, &config, &slots.running, &ctx.completer).await;
                    }
                    Instant::now() + heartbeat_every
                } else {
                    Instant::now() + leases::heartbeat_retry(&config)
                };
            }
            _ = reaper.tick() => leases::reap(&store, &config).await,
            () = &mut look_timer, if !claim_now && stopping.is_none() => {
                WorkerStats::bump(&stats.timed_looks);
                claim_now = true;
            }
            _ = std::future::ready(()), if claim_now && stopping.is_none() && claiming.is_none() => {}
        }
    }
    info!(?summary, "worker stopped");
    Ok(summary)
}

/// After a claim that got fewer jobs than it asked for: plan the next look (at the next
/// poll, or when the next delayed job or retry falls due) and, with `--drain`, tell
/// whether nothing runnable remains (true: stop).
async fn after_short_claim(
    store: &Store,
    config: &WorkerConfig,
    idle: &mut IdleSchedule,
    listening: bool,
    slots: &Slots,
    completer: &Completer,
    next_look: &mut Instant,
) -> bool {
    *next_look = Instant::now() + idle.next_wait(listening);
    let due_in = next_due_in(store, config, idle).await;
    if let Some(due_in) = due_in {
        // A job due now that this claim did not get is another worker's: do not spin.
        *next_look = (*next_look).min(Instant::now() + due_in.max(MIN_IDLE_LOOK));
    }
    let nothing_soon = due_in.is_none_or(|d| d > config.drain_horizon);
    if config.drain && slots.is_empty() && nothing_soon {
        if leases::release_orphans(store, config, &slots.running, completer).await == 0 {
            info!("drained: nothing runnable remains");
            return true;
        }
        // Released orphans are runnable again: look now.
        *next_look = Instant::now();
    }
    false
}

/// A claim running beside the loop; `Err(())`: it failed (already logged).
type ClaimInFlight = JoinHandle<Result<Vec<ClaimedJob>, ()>>;

/// Claims up to `wanted` jobs; an error is logged and means "look again soon".
async fn claim(store: Store, config: WorkerConfig, wanted: usize) -> Result<Vec<ClaimedJob>, ()> {
    let request = ClaimRequest {
        worker: config.worker_id.clone(),
        limit: wanted as u32,
        lease: config.claim_lease(),
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
