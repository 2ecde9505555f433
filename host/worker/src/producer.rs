//! The claim loop, in two phases that read top to bottom: [`Producer::running`] claims
//! jobs up to the free slots and starts them until shutdown (or, with `--drain`, until
//! nothing runnable remains); [`Producer::shutting_down`] gives back queued jobs, lets
//! running attempts finish until the drain deadline, interrupts the rest and gives up
//! when the budget is spent.
//!
//! Every store call the loop makes (claim, heartbeat, orphan check, next due time) runs
//! beside it (`beside`) and comes back as a reply, so the loop never waits on the
//! database: freed slots are refilled from the prefetch queue and finished attempts
//! collected while a call is out. When to claim is [`ClaimPlan`]'s decision.
//!
//! Must not speak SQL or wasmtime, decide an attempt's outcome (`executor`), or write a
//! job's end (`completer`).

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use sluice_store::{Notice, Store};
use tokio::time::{Instant, Sleep, sleep_until};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::attempt::{AttemptContext, StopReason};
use super::beside::{self, Beside, Call, Reply};
use super::config::{WorkerConfig, WorkerSummary};
use super::leases;
use super::plan::ClaimPlan;
use super::prefetch::{Prefetch, PrefetchSizer};
use super::shutdown::Stopping;
use super::slots::{SlotEvent, Slots};
use super::wakeup::{IdleSchedule, Wake, Wakeups};

/// The shortest wait between two idle looks for work.
const MIN_IDLE_LOOK: Duration = Duration::from_millis(20);

/// With `--prefetch auto`: how long the queue may hold jobs without starting one (every
/// slot busy all along) before the jobs beyond the current depth are given back for
/// other workers, and how often that is checked.
const STALL_LIMIT: Duration = Duration::from_millis(500);
const STALL_CHECK: Duration = Duration::from_millis(250);

/// How long jobs may look due without this worker's claims getting them before it stops
/// looking early for them and waits for a notice or its idle poll instead.
const UNCLAIMABLE_GRACE: Duration = Duration::from_secs(1);

/// How the running phase ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ended {
    /// Shutdown was asked for: the shutdown phase follows.
    Signal,
    /// `--drain`: nothing runnable remains and nothing is held.
    Drained,
}

pub(super) struct Producer {
    store: Store,
    config: Arc<WorkerConfig>,
    ctx: AttemptContext,
    slots: Slots,
    plan: ClaimPlan,
    /// The prefetch queue's depth now (fixed, or sized from what this worker sees).
    sizer: PrefetchSizer,
    idle: IdleSchedule,
    wakeups: Wakeups,
    beside: Beside,
    /// Claims started so far: an orphan check asked before the latest is stale.
    claims: u64,
    /// A notice said new jobs arrived since the last claim started: claim even if the
    /// prefetch queue is deep enough ([`Slots::wanted_on_notice`]).
    noticed: bool,
    /// A draining worker asked for an orphan check while another was in flight: its
    /// reply decides whether to stop.
    drain_asked: bool,
    /// Since when jobs have looked due now while this worker's claims came back without
    /// them: such jobs are not its to run (a newer contract, secrets or webhook
    /// deliveries it holds no key for, a tenant at its cap, or another worker's claim).
    /// After [`UNCLAIMABLE_GRACE`] it stops looking early for them, and a draining
    /// worker stops once it lasts longer than its drain horizon.
    due_unclaimed_since: Option<Instant>,
    stopping: bool,
    heartbeat_every: Duration,
    next_heartbeat: Instant,
    // Kept across turns and reset only when their deadline moves: the loop turns once
    // per finished attempt, and a fresh `Sleep` per turn showed up as a tenth of the
    // worker's CPU under load.
    heartbeat_timer: Pin<Box<Sleep>>,
    look_timer: Pin<Box<Sleep>>,
    stall_timer: Pin<Box<Sleep>>,
    pub(super) summary: WorkerSummary,
}

impl Producer {
    pub(super) fn new(
        store: Store,
        config: Arc<WorkerConfig>,
        ctx: AttemptContext,
        wakeups: Wakeups,
    ) -> Producer {
        let now = Instant::now();
        let heartbeat_every = config.claim_lease() / 3;
        Producer {
            plan: ClaimPlan::new(now),
            sizer: PrefetchSizer::new(config.prefetch, config.concurrency, now),
            idle: IdleSchedule::new(config.idle),
            heartbeat_every,
            next_heartbeat: now + heartbeat_every,
            heartbeat_timer: Box::pin(sleep_until(now + heartbeat_every)),
            look_timer: Box::pin(sleep_until(now)),
            stall_timer: Box::pin(sleep_until(now + STALL_CHECK)),
            store,
            config,
            ctx,
            slots: Slots::new(),
            wakeups,
            beside: Beside::default(),
            claims: 0,
            noticed: false,
            drain_asked: false,
            due_unclaimed_since: None,
            stopping: false,
            summary: WorkerSummary::default(),
        }
    }

    /// Claims and runs jobs until `shutdown` fires or, with `--drain`, nothing runnable
    /// remains.
    pub(super) async fn running(&mut self, shutdown: &CancellationToken) -> Ended {
        loop {
            self.claim_if_due();
            self.arm_timers();
            tokio::select! {
                _ = shutdown.cancelled() => return Ended::Signal,
                event = self.slots.next_event() => self.on_slot_event(event),
                reply = self.beside.next() => {
                    if self.on_reply(reply) == Some(Ended::Drained) {
                        info!("drained: nothing runnable remains");
                        return Ended::Drained;
                    }
                }
                wake = self.wakeups.recv() => self.on_wake(wake),
                () = &mut self.heartbeat_timer, if self.beat_due() => self.beat(),
                () = &mut self.look_timer, if self.plan.waiting() => self.plan.look_now(),
                () = &mut self.stall_timer, if self.watch_stalls() => self.on_stall_check(),
            }
        }
    }

    /// Stops claiming, gives queued jobs back, lets running attempts finish until the
    /// drain deadline, then interrupts them (their jobs are released) and gives up on
    /// what remains when the budget is spent. Heartbeats and cancel notices go on.
    pub(super) async fn shutting_down(&mut self) {
        info!(
            running = self.slots.held_count(),
            "shutting down: no more claims; running attempts may finish within {:?}",
            self.config.shutdown.drain
        );
        self.stopping = true;
        let mut stop = Stopping::begin(self.config.shutdown);
        self.slots.release_queued(&self.ctx);
        while !self.slots.is_empty() || self.plan.claiming() {
            self.arm_timers();
            tokio::select! {
                () = stop.drain_deadline() => {
                    stop.mark_interrupted();
                    warn!(running = self.slots.held_count(), "drain deadline passed: interrupting attempts and releasing their jobs");
                    self.slots.interrupt_all(StopReason::Shutdown);
                }
                () = stop.budget_spent() => {
                    self.summary.abandoned = self.slots.held_count() as u64;
                    warn!(abandoned = self.summary.abandoned, "shutdown budget spent: leaving the remaining jobs to the reaper");
                    self.slots.abort_all();
                    return;
                }
                event = self.slots.next_event() => self.on_slot_event(event),
                reply = self.beside.next() => { self.on_reply(reply); }
                wake = self.wakeups.recv() => self.on_wake(wake),
                () = &mut self.heartbeat_timer, if self.beat_due() => self.beat(),
            }
        }
        info!("shutdown: every attempt finished or was released");
    }

    fn claim_if_due(&mut self) {
        if self.stopping || !self.plan.due() {
            return;
        }
        let now = Instant::now();
        self.sizer.look(now);
        let depth = self.sizer.depth();
        self.config.metrics.prefetch_depth(depth);
        let noticed = std::mem::take(&mut self.noticed);
        let wanted = match self.slots.wanted(&self.config, depth) {
            0 if noticed => self.slots.wanted_on_notice(&self.config, depth),
            n => n,
        };
        // Every slot busy and new jobs noticed: a tenant with nothing executing here may
        // have one; claim it for a spare slot (its claim leaves the others' jobs).
        let spare = (wanted == 0 && noticed)
            .then(|| self.slots.spare_claim(&self.config, depth))
            .flatten();
        let safety_poll = self.config.idle.safety_poll;
        let (wanted, skip) = match spare {
            Some(spare) => (self.plan.start_spare(spare.wanted), Some(spare.skip)),
            None => (self.plan.start(wanted, now, safety_poll), None),
        };
        if let Some(wanted) = wanted {
            self.claims += 1;
            self.sizer.claim_sent(now);
            let (store, config) = (self.store.clone(), self.config.clone());
            let max_contract = self.ctx.registry.max_contract();
            let secret_keys = self.ctx.registry.secret_key_ids();
            self.beside.spawn(Call::Claim, async move {
                let jobs =
                    beside::claim(&store, &config, wanted, max_contract, secret_keys, skip).await;
                Reply::Claimed(jobs)
            });
        }
    }

    fn arm_timers(&mut self) {
        if self.heartbeat_timer.deadline() != self.next_heartbeat {
            self.heartbeat_timer.as_mut().reset(self.next_heartbeat);
        }
        let next_look = self.plan.next_look();
        if self.look_timer.deadline() != next_look {
            self.look_timer.as_mut().reset(next_look);
        }
    }

    /// A slot freed: start queued jobs now (unless stopping), and let the plan decide
    /// whether to top the queue up.
    fn on_slot_event(&mut self, event: SlotEvent) {
        match event {
            SlotEvent::Ran(job_id) => {
                let ended = self.slots.ran(job_id);
                self.sizer.completed(ended, Instant::now());
            }
            SlotEvent::Joined(joined) => self.slots.collect(joined, &mut self.summary),
        }
        if !self.stopping {
            self.slots.start_queued(&self.ctx, &self.config);
        }
        self.plan
            .slot_freed(self.config.drain && self.slots.is_empty());
    }

    /// A call beside the loop came back. `Some(Drained)`: a draining worker may stop.
    fn on_reply(&mut self, reply: Reply) -> Option<Ended> {
        if matches!(reply, Reply::Claimed(_)) {
            self.sizer.claim_returned(Instant::now());
        }
        match reply {
            Reply::Claimed(None) => {
                let retry = self.idle.retry_after_error();
                self.plan.claim_failed(Instant::now(), retry);
            }
            Reply::Claimed(Some(jobs)) => self.on_claimed(jobs),
            Reply::Renewed(news) => {
                let now = Instant::now();
                self.next_heartbeat = match news {
                    Some(news) => {
                        news.interrupt(&self.slots.held);
                        // The orphan check compares the database with the held jobs,
                        // which are incomplete while a claim is in flight.
                        if !self.plan.claiming() {
                            self.check_orphans(false);
                        }
                        now + self.heartbeat_every
                    }
                    None => now + leases::heartbeat_retry(&self.config),
                };
            }
            Reply::DueIn(due_in) => return self.on_due_in(due_in),
            Reply::HeldLeases {
                claims,
                drain,
                held,
                due_after,
            } => {
                let drain = drain || std::mem::take(&mut self.drain_asked);
                let Some(held) = held.filter(|_| claims == self.claims && !self.plan.claiming())
                else {
                    // Unreadable, or a claim started since it was asked: ask again later.
                    if drain {
                        self.plan.look_now();
                    }
                    return None;
                };
                let orphans = leases::orphans(held, &self.slots.held);
                if orphans.is_empty() {
                    if !(drain && self.slots.is_empty() && !self.stopping) {
                        return None;
                    }
                    return match due_after {
                        Some(Ok(due)) if self.nothing_soon(due, Instant::now()) => {
                            Some(Ended::Drained)
                        }
                        // Due soon after all (a retry written meanwhile), unread, or
                        // asked without it: the next look decides.
                        Some(Ok(due)) => self.on_due_in(Ok(due)),
                        _ => {
                            self.plan.look_now();
                            None
                        }
                    };
                }
                let completer = self.ctx.completer.clone();
                self.beside.spawn(Call::ReleaseOrphans, async move {
                    Reply::OrphansReleased(leases::release_orphans(&completer, orphans).await)
                });
            }
            // Released orphans are runnable again: look now.
            Reply::OrphansReleased(released) if released > 0 => {
                self.config.metrics.orphans_released(released);
                self.plan.look_now();
            }
            Reply::OrphansReleased(_) => {}
        }
        None
    }

    fn on_claimed(&mut self, jobs: Vec<sluice_store::ClaimedJob>) {
        if !jobs.is_empty() {
            self.idle.reset();
            self.due_unclaimed_since = None;
        }
        let short = self.plan.claimed(jobs.len());
        jobs.into_iter().for_each(|job| self.slots.hold(job));
        if self.stopping {
            self.slots.release_queued(&self.ctx);
            return;
        }
        self.slots.start_queued(&self.ctx, &self.config);
        if short {
            // Look after the idle wait, or sooner if a delayed job or retry falls due
            // before it (asked beside the loop).
            let wait = self.idle.next_wait(self.wakeups.listening());
            self.plan.look_at(Instant::now() + wait);
            if !self.beside.in_flight(Call::DueIn) {
                let (store, tenants) = (self.store.clone(), self.config.tenants.clone());
                self.beside.spawn(Call::DueIn, async move {
                    Reply::DueIn(beside::next_due_in(&store, tenants.as_deref()).await)
                });
            }
        }
    }

    /// After a short claim: bring the next look forward to the next due job and, with
    /// `--drain`, find out whether anything runnable remains.
    fn on_due_in(&mut self, due_in: Result<Option<Duration>, ()>) -> Option<Ended> {
        let due_in = due_in.unwrap_or_else(|()| Some(self.idle.retry_after_error()));
        let now = Instant::now();
        if due_in.is_some_and(|d| d.is_zero()) {
            self.due_unclaimed_since.get_or_insert(now);
        } else {
            self.due_unclaimed_since = None;
        }
        if let Some(due_in) = due_in {
            if self.unclaimable_for(now) < UNCLAIMABLE_GRACE {
                // A job due now that the claim did not get is another worker's: do not spin.
                self.plan.look_by(now + due_in.max(MIN_IDLE_LOOK));
            } else if self.config.drain {
                // Look once a second until the drain horizon says these are not ours.
                self.plan.look_by(now + UNCLAIMABLE_GRACE);
            }
        }
        if self.config.drain && self.slots.is_empty() && self.nothing_soon(due_in, now) {
            // Stop once no orphan of this worker is left either (see `HeldLeases`), and
            // nothing is due soon when asked again after that (an attempt that ended
            // meanwhile may have made its job due again).
            self.check_orphans(true);
        }
        None
    }

    /// How long a job due now has stayed unclaimed by this worker.
    fn unclaimable_for(&self, now: Instant) -> Duration {
        self.due_unclaimed_since
            .map_or(Duration::ZERO, |since| now - since)
    }

    /// `--drain`'s test: no job due within the drain horizon, or the due ones have not
    /// been claimable by this worker for that long.
    fn nothing_soon(&self, due_in: Option<Duration>, now: Instant) -> bool {
        due_in.is_none_or(|d| d > self.config.drain_horizon)
            || (due_in.is_some_and(|d| d.is_zero())
                && self.unclaimable_for(now) > self.config.drain_horizon)
    }

    fn check_orphans(&mut self, drain: bool) {
        if self.beside.in_flight(Call::HeldLeases {
            claims: 0,
            drain: false,
        }) || self.beside.in_flight(Call::ReleaseOrphans)
        {
            self.drain_asked |= drain;
            return;
        }
        let call = Call::HeldLeases {
            claims: self.claims,
            drain,
        };
        let (store, worker) = (self.store.clone(), self.config.worker_id.clone());
        let tenants = self.config.tenants.clone();
        let claims = self.claims;
        self.beside.spawn(call, async move {
            let held = leases::held_by(&store, &worker).await;
            let due_after = match drain {
                true => Some(beside::next_due_in(&store, tenants.as_deref()).await),
                false => None,
            };
            Reply::HeldLeases {
                claims,
                drain,
                held,
                due_after,
            }
        });
    }

    fn on_wake(&mut self, wake: Wake) {
        match wake {
            Wake::Notice(Notice::JobsAvailable) => {
                self.noticed = true;
                self.plan.look_now();
            }
            Wake::Notice(Notice::Reconnected) | Wake::ListenBack => self.plan.look_now(),
            Wake::Notice(Notice::JobsDueIn(due_in)) => {
                self.plan.look_by(Instant::now() + due_in);
            }
            Wake::Notice(Notice::CancelRequested(id)) => {
                if let Some(job) = self.slots.held.get(&id) {
                    job.interrupt.stop(StopReason::Cancelled);
                }
            }
            Wake::ListenLost => {
                self.config.metrics.listener_fallback();
                self.idle.reset();
                self.plan.look_now();
            }
        }
    }

    /// Whether to watch the prefetch queue for stalls: `auto` sizing with jobs queued.
    fn watch_stalls(&self) -> bool {
        self.config.prefetch == Prefetch::Auto && self.slots.has_queued()
    }

    /// Every slot has been busy for [`STALL_LIMIT`] with jobs still queued: the slots
    /// hold long attempts, and the queue (sized while jobs were short) would make its
    /// jobs wait for them while another worker may have free slots. Gives back what
    /// exceeds the depth the sizer now wants (none, once completions have stopped).
    fn on_stall_check(&mut self) {
        let now = Instant::now();
        self.stall_timer.as_mut().reset(now + STALL_CHECK);
        let Some(stalled) = self.slots.queue_stalled_for(now) else {
            return;
        };
        if stalled < STALL_LIMIT {
            return;
        }
        self.sizer.look(now);
        let given = self.slots.release_excess(&self.ctx, self.sizer.depth());
        if given > 0 {
            self.config.metrics.prefetch_given_back(given);
            info!(
                given,
                "gave queued jobs back: no slot has freed for {stalled:?}"
            );
        }
    }

    fn beat_due(&self) -> bool {
        !self.beside.in_flight(Call::Heartbeat)
    }

    /// Renews every held lease beside the loop; the reply interrupts what was lost or
    /// cancelled.
    fn beat(&mut self) {
        let renewal = leases::Renewal::of(&self.config, &self.slots.held);
        let (store, config) = (self.store.clone(), self.config.clone());
        self.beside.spawn(Call::Heartbeat, async move {
            Reply::Renewed(renewal.send(&store, &config).await)
        });
    }
}
