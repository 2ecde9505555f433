//! The jobs a worker holds a lease on, in the three places one can be: waiting in the
//! prefetch queue, executing (resolving its type and running in the sandbox), or
//! recording (the sandbox is done; the outcome is being written, usually in a batched
//! completion). Every held job is heartbeated and released on shutdown.
//!
//! Only executing jobs count against `concurrency`: a job whose guest has finished frees
//! its slot at once, so the next one starts while the outcome is still on its way to the
//! database. Beyond `concurrency`, the spare slots take only jobs of tenants with nothing
//! executing here. Owns that bookkeeping and the attempt tasks, each run by `executor` (a
//! component) or `webhook_attempt` (a webhook delivery), chosen by the job's type; must not
//! claim, speak SQL or decide outcomes (those two do).

use std::collections::HashMap;

use sluice_store::{ClaimedJob, Lease, WEBHOOK_JOB_TYPE};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tracing::warn;

use super::attempt::{AttemptContext, Executing, Interrupt, StopReason, release_unstarted};
use super::completer::Recorded;
use super::config::{WorkerConfig, WorkerSummary};
use super::fair_queue::FairQueue;
use super::{executor, webhook_attempt};

/// One held job (queued, executing or recording: its [`Phase`]): its lease and the
/// handle that interrupts its attempt.
pub(super) struct HeldJob {
    pub(super) lease: Lease,
    pub(super) tenant: String,
    pub(super) interrupt: Interrupt,
    pub(super) phase: Phase,
}

/// Where a held job is (see the module comment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// In the prefetch queue: keeps the prefetch lease.
    Queued,
    /// Started and still in the sandbox (counts against `concurrency`).
    Executing,
    /// The sandbox is done; the outcome is being written.
    Recording,
}

/// See [`Slots::spare_claim`].
#[derive(Debug, PartialEq, Eq)]
pub(super) struct SpareClaim {
    pub(super) wanted: usize,
    pub(super) skip: Vec<String>,
}

/// See [`Slots::next_event`].
pub(super) enum SlotEvent {
    Ran(i64),
    Joined(Joined),
}

type Joined = Result<(tokio::task::Id, Recorded), tokio::task::JoinError>;

pub(super) struct Slots {
    tasks: JoinSet<Recorded>,
    /// Every held job by id, in any phase.
    pub(super) held: HashMap<i64, HeldJob>,
    task_jobs: HashMap<tokio::task::Id, i64>,
    /// The prefetch queue, fair between tenants.
    queued: FairQueue,
    executing: usize,
    /// When a queued job last started (a queue that does not move is stalled).
    last_start: Instant,
    ran_tx: mpsc::UnboundedSender<i64>,
    ran_rx: mpsc::UnboundedReceiver<i64>,
}

impl Slots {
    pub(super) fn new() -> Slots {
        let (ran_tx, ran_rx) = mpsc::unbounded_channel();
        Slots {
            tasks: JoinSet::new(),
            held: HashMap::new(),
            task_jobs: HashMap::new(),
            queued: FairQueue::default(),
            executing: 0,
            last_start: Instant::now(),
            ran_tx,
            ran_rx,
        }
    }

    /// How many jobs to claim now: enough to fill every free slot and a prefetch queue
    /// of `depth` (the sizer's current figure), once the queue has fallen to half its
    /// size (so claims come in batches). Never lets the jobs held (including those
    /// still recording) pass twice what executing and prefetch need, so a slow database
    /// cannot make a worker hoard.
    pub(super) fn wanted(&self, config: &WorkerConfig, depth: usize) -> usize {
        let target = config.concurrency + depth;
        let waiting = self.executing + self.queued.len();
        if self.queued.len() > depth / 2 || waiting >= target {
            return 0;
        }
        (target - waiting).min(self.room(config, depth))
    }

    /// How many to claim when a notice says new jobs arrived although the prefetch
    /// queue is deep enough (`wanted` is 0): up to one job per slot, within the same
    /// hoarding bound. The fair claim hands out the tenant running the fewest jobs first
    /// and the fair queue starts it at the next free slot, so a light tenant's job waits
    /// one slot turnover, not the whole prefetched queue (issue #22). Without a prefetch
    /// queue (`depth` 0), nothing: jobs are only claimed for free slots.
    pub(super) fn wanted_on_notice(&self, config: &WorkerConfig, depth: usize) -> usize {
        if depth == 0 {
            return 0;
        }
        config.concurrency.min(self.room(config, depth))
    }

    /// A claim for the free spare slots, when every regular slot is busy: how many, and
    /// the tenants it must leave (those executing here). `None` when no spare slot is
    /// free, nothing may be claimed, or every tenant this worker runs executes here.
    pub(super) fn spare_claim(&self, config: &WorkerConfig, depth: usize) -> Option<SpareClaim> {
        if self.executing < config.concurrency {
            return None;
        }
        let free = config.max_executing().saturating_sub(self.executing);
        let wanted = free.min(self.room(config, depth));
        let skip: Vec<String> = self.queued.executing_tenants().cloned().collect();
        let all_skipped = config
            .tenants
            .as_ref()
            .is_some_and(|only| only.iter().all(|t| skip.contains(t)));
        (wanted > 0 && !all_skipped).then_some(SpareClaim { wanted, skip })
    }

    /// Jobs that may still be claimed before the held ones (including those still
    /// recording) pass twice what executing and a queue of `depth` need.
    fn room(&self, config: &WorkerConfig, depth: usize) -> usize {
        (2 * (config.concurrency + depth)).saturating_sub(self.held.len())
    }

    /// Takes a claimed job into the queue; `start_queued` runs it when a slot is free.
    pub(super) fn hold(&mut self, job: ClaimedJob) {
        self.held.insert(
            job.id,
            HeldJob {
                lease: job.lease,
                tenant: job.tenant.clone(),
                interrupt: Interrupt::default(),
                phase: Phase::Queued,
            },
        );
        self.queued.push(job);
    }

    /// Starts queued jobs while fewer than `concurrency` are executing, then, in the
    /// spare slots, jobs of tenants with nothing executing here.
    pub(super) fn start_queued(&mut self, ctx: &AttemptContext, config: &WorkerConfig) {
        let mut started = false;
        while self.executing < config.max_executing() {
            let next = if self.executing < config.concurrency {
                self.queued.pop()
            } else {
                self.queued.pop_idle()
            };
            let Some(job) = next else {
                break;
            };
            let Some(held) = self.held.get_mut(&job.id) else {
                self.queued.finished(&job.tenant);
                continue;
            };
            held.phase = Phase::Executing;
            self.executing += 1;
            started = true;
            let executing = Executing::new(self.ran_tx.clone(), job.id);
            let job_id = job.id;
            let (ctx, interrupt) = (ctx.clone(), held.interrupt.clone());
            // Boxed: the attempt's future is kilobytes, copied whole on every move
            // (into the task, and when tokio stores its output) unless it is boxed.
            let task = if job.job_type == WEBHOOK_JOB_TYPE {
                let delivery = webhook_attempt::run(ctx, job, interrupt, executing);
                self.tasks.spawn(Box::pin(delivery))
            } else {
                let run = executor::run_attempt(ctx, job, interrupt, executing);
                self.tasks.spawn(Box::pin(run))
            };
            self.task_jobs.insert(task.id(), job_id);
        }
        if started {
            self.last_start = Instant::now();
        }
    }

    /// Gives every queued job back (shutdown): released, its attempt not used up.
    pub(super) fn release_queued(&mut self, ctx: &AttemptContext) {
        let jobs = self.queued.drain();
        self.give_back(ctx, jobs, "host shutting down before the attempt started");
    }

    pub(super) fn has_queued(&self) -> bool {
        self.queued.len() > 0
    }

    /// How long the queue has held jobs without starting one (`None`: it is empty).
    pub(super) fn queue_stalled_for(&self, now: Instant) -> Option<std::time::Duration> {
        (self.queued.len() > 0).then(|| now.saturating_duration_since(self.last_start))
    }

    /// Gives back the queued jobs beyond the first `keep` (the last claimed go first),
    /// so that another worker with a free slot may start them; returns how many.
    pub(super) fn release_excess(&mut self, ctx: &AttemptContext, keep: usize) -> usize {
        let excess = self.queued.len().saturating_sub(keep);
        let jobs = self.queued.take_newest(excess);
        let given = jobs.len();
        self.give_back(
            ctx,
            jobs,
            "given back unstarted: this worker's slots were all busy with long attempts",
        );
        given
    }

    fn give_back(&mut self, ctx: &AttemptContext, jobs: Vec<ClaimedJob>, reason: &'static str) {
        for job in jobs {
            let task = self
                .tasks
                .spawn(release_unstarted(ctx.clone(), job.lease, reason));
            self.task_jobs.insert(task.id(), job.id);
        }
    }

    /// The next thing that happened to a held job: a sandbox run ended (its slot is
    /// free) or an attempt task finished.
    pub(super) async fn next_event(&mut self) -> SlotEvent {
        tokio::select! {
            biased;
            // Never `None`: the sender lives in `self`.
            Some(job_id) = self.ran_rx.recv() => SlotEvent::Ran(job_id),
            Some(joined) = self.tasks.join_next_with_id() => SlotEvent::Joined(joined),
        }
    }

    /// Frees the slots of `first` and of every other job whose run has ended since;
    /// returns how many runs ended.
    pub(super) fn ran(&mut self, first: i64) -> u32 {
        let mut next = Some(first);
        let mut ended = 0;
        while let Some(job_id) = next {
            self.stop_executing(job_id);
            ended += 1;
            next = self.ran_rx.try_recv().ok();
        }
        ended
    }

    fn stop_executing(&mut self, job_id: i64) {
        if let Some(held) = self.held.get_mut(&job_id)
            && held.phase == Phase::Executing
        {
            held.phase = Phase::Recording;
            self.executing -= 1;
            self.queued.finished(&held.tenant);
        }
    }

    /// Books every attempt task that has finished, starting with `first`.
    pub(super) fn collect(&mut self, first: Joined, summary: &mut WorkerSummary) {
        let mut next = Some(first);
        while let Some(joined) = next {
            let task = match &joined {
                Ok((task, _)) => *task,
                Err(error) => error.id(),
            };
            if let Some(job_id) = self.task_jobs.remove(&task) {
                // A task that died before its `Executing` guard was dropped still frees
                // its slot here.
                self.stop_executing(job_id);
                self.held.remove(&job_id);
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

    pub(super) fn interrupt_all(&self, reason: StopReason) {
        for job in self.held.values() {
            job.interrupt.stop(reason);
        }
    }

    /// Stops waiting for every attempt (the shutdown budget is spent).
    pub(super) fn abort_all(&mut self) {
        self.tasks.abort_all();
    }

    /// Jobs held in any phase.
    pub(super) fn held_count(&self) -> usize {
        self.held.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}
