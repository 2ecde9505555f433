//! When to claim and how much: [`ClaimPlan`], a small value the claim loop consults on
//! every turn and tells about everything that bears on it (a freed slot, a claim's
//! result, a notice, a timer). Pure: no I/O, no clock (the caller passes `now`), so each
//! rule is a unit test.
//!
//! The rules: claim at start; after a full claim (more may be waiting: the backlog),
//! claim again as soon as a slot frees; after a short claim, only a notification, the
//! look timer (an idle poll or a known due time) or, with `--drain`, the last attempt
//! ending does; one claim at a time. A quiet queue costs one claim per job, not one per
//! finished attempt. A claim for spare slots (`start_spare`: every slot busy, a notice
//! came) asks only for other tenants' jobs, so its result leaves the plan as it was.
//! Must not: size a claim (`Slots::wanted` does) or know about LISTEN
//! (the caller passes the idle wait).

use std::time::Duration;

use tokio::time::Instant;

/// What the claim in flight is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum InFlight {
    /// Free slots and the prefetch queue: this many jobs were asked for.
    Slots(usize),
    /// Spare slots: only tenants with nothing executing here, so its result says
    /// nothing of the backlog.
    Spare,
}

/// The claim loop's claiming state. See the module comment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ClaimPlan {
    /// The last claim came back full: more jobs may be waiting.
    backlog: bool,
    /// A claim should start as soon as none is in flight.
    claim_now: bool,
    /// The claim in flight, if any.
    in_flight: Option<InFlight>,
    /// When to look for work if nothing else says so.
    next_look: Instant,
}

impl ClaimPlan {
    /// A worker starting up claims at once.
    pub(super) fn new(now: Instant) -> ClaimPlan {
        ClaimPlan {
            backlog: true,
            claim_now: true,
            in_flight: None,
            next_look: now,
        }
    }

    /// Whether to start a claim now (one is wanted and none is in flight).
    pub(super) fn due(&self) -> bool {
        self.claim_now && self.in_flight.is_none()
    }

    /// A claim for `wanted` jobs starts (when `due`). With nothing wanted (slots and
    /// queue are full) none starts: the next freed slot asks again, and the look timer
    /// moves out by `idle_wait`, so that a look time already past does not fire on
    /// every turn. Returns how many to claim, if any.
    pub(super) fn start(
        &mut self,
        wanted: usize,
        now: Instant,
        idle_wait: Duration,
    ) -> Option<usize> {
        if !self.due() {
            return None;
        }
        self.claim_now = false;
        if wanted == 0 {
            self.next_look = now + idle_wait;
            return None;
        }
        self.in_flight = Some(InFlight::Slots(wanted));
        Some(wanted)
    }

    /// A claim for `wanted` spare slots starts (when `due`; see `Slots::spare_claim`).
    /// It asks only for tenants with nothing executing here, so what it gets says
    /// nothing of the backlog: the plan stays as it was.
    pub(super) fn start_spare(&mut self, wanted: usize) -> Option<usize> {
        if !self.due() || wanted == 0 {
            return None;
        }
        self.claim_now = false;
        self.in_flight = Some(InFlight::Spare);
        Some(wanted)
    }

    /// The claim in flight came back with `got` jobs. A full batch means more may be
    /// waiting: claim again at once. True when it came back short (the caller then plans
    /// the next look with [`ClaimPlan::look_at`]); never for a spare slots' claim.
    pub(super) fn claimed(&mut self, got: usize) -> bool {
        let wanted = match self.in_flight.take() {
            Some(InFlight::Spare) => return false,
            Some(InFlight::Slots(wanted)) => wanted,
            None => 0,
        };
        let short = got < wanted;
        self.backlog = !short;
        self.claim_now |= !short;
        short
    }

    /// The claim in flight failed: look again after `retry`, and treat the queue as
    /// backed up meanwhile (a freed slot claims at once).
    pub(super) fn claim_failed(&mut self, now: Instant, retry: Duration) {
        self.in_flight = None;
        self.backlog = true;
        self.next_look = now + retry;
    }

    /// A slot freed (an attempt ran or its task ended). Claims again if the queue is
    /// backed up, or with `--drain` once nothing is held (to find out whether to stop).
    pub(super) fn slot_freed(&mut self, drain_and_idle: bool) {
        self.claim_now |= self.backlog || drain_and_idle;
    }

    /// A notification (jobs available, LISTEN back, a timer) says: look now.
    pub(super) fn look_now(&mut self) {
        self.claim_now = true;
    }

    /// Look at `at` at the latest (a delayed job or retry falls due then).
    pub(super) fn look_by(&mut self, at: Instant) {
        self.next_look = self.next_look.min(at);
    }

    /// Set the next look to `at` (after a short claim: the idle wait).
    pub(super) fn look_at(&mut self, at: Instant) {
        self.next_look = at;
    }

    /// When the look timer fires, unless a claim is already wanted.
    pub(super) fn next_look(&self) -> Instant {
        self.next_look
    }

    /// Whether the look timer should be armed (no claim is already wanted).
    pub(super) fn waiting(&self) -> bool {
        !self.claim_now
    }

    /// Whether a claim is in flight.
    pub(super) fn claiming(&self) -> bool {
        self.in_flight.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLL: Duration = Duration::from_secs(30);

    fn plan() -> (ClaimPlan, Instant) {
        let now = Instant::now();
        (ClaimPlan::new(now), now)
    }

    #[test]
    fn a_new_worker_claims_at_once_and_only_one_claim_runs_at_a_time() {
        let (mut plan, now) = plan();
        assert!(plan.due());
        assert_eq!(plan.start(8, now, POLL), Some(8));
        assert!(plan.claiming() && !plan.due());
        plan.look_now();
        assert!(!plan.due(), "a notice during a claim waits for it");
        assert_eq!(plan.start(8, now, POLL), None);
        plan.claimed(2);
        assert!(plan.due(), "the notice is remembered");
    }

    #[test]
    fn after_a_full_claim_every_freed_slot_claims_again() {
        let (mut plan, now) = plan();
        plan.start(4, now, POLL);
        assert!(!plan.claimed(4), "a full batch is not short");
        assert!(plan.due(), "more may be waiting: claim again now");
        plan.start(4, now, POLL);
        plan.claimed(4);
        plan.start(0, now, POLL);
        assert!(!plan.due());
        plan.slot_freed(false);
        assert!(plan.due());
    }

    #[test]
    fn after_a_short_claim_a_freed_slot_does_not_claim_but_a_notice_or_the_timer_does() {
        let (mut plan, now) = plan();
        plan.start(4, now, POLL);
        assert!(plan.claimed(1));
        assert!(!plan.due() && plan.waiting());
        plan.look_at(now + POLL);
        plan.slot_freed(false);
        assert!(!plan.due(), "a quiet queue costs one claim per job");
        plan.look_now();
        assert!(plan.due() && !plan.waiting());
    }

    #[test]
    fn a_spare_slots_claim_leaves_the_backlog_as_it_was() {
        let (mut plan, now) = plan();
        plan.start(4, now, POLL);
        assert!(!plan.claimed(4), "full: the backlog is there");
        assert_eq!(plan.start(0, now, POLL), None, "every slot busy");
        plan.look_now();
        assert_eq!(plan.start_spare(1), Some(1));
        assert!(plan.claiming() && !plan.due());
        assert_eq!(plan.start_spare(1), None, "one claim at a time");
        assert!(!plan.claimed(0), "an empty spare claim is not a short one");
        plan.slot_freed(false);
        assert!(plan.due(), "a freed slot still claims for the backlog");
        plan.start(0, now, POLL);
        plan.look_now();
        plan.start_spare(1);
        plan.claim_failed(now, Duration::from_secs(2));
        assert!(!plan.claiming(), "a failed spare claim is over too");
        assert_eq!(
            plan.start_spare(1),
            None,
            "not due until something asks again"
        );
        plan.slot_freed(false);
        assert!(plan.due());

        let mut quiet = ClaimPlan::new(now).with_short_claim(now);
        quiet.look_now();
        quiet.start_spare(1);
        quiet.claimed(1);
        quiet.slot_freed(false);
        assert!(
            !quiet.due(),
            "nor does a spare claim make a quiet queue look backed up"
        );
    }

    impl ClaimPlan {
        /// This plan after a claim that came back short.
        fn with_short_claim(mut self, now: Instant) -> ClaimPlan {
            self.start(4, now, POLL);
            assert!(self.claimed(1));
            self
        }
    }

    #[test]
    fn with_drain_the_last_attempt_ending_claims_to_find_out_whether_to_stop() {
        let (mut plan, now) = plan();
        plan.start(4, now, POLL);
        plan.claimed(0);
        plan.slot_freed(true);
        assert!(plan.due());
    }

    #[test]
    fn a_failed_claim_looks_again_after_the_retry_and_treats_the_queue_as_backed_up() {
        let (mut plan, now) = plan();
        plan.start(4, now, POLL);
        plan.claim_failed(now, Duration::from_secs(2));
        assert_eq!(plan.next_look(), now + Duration::from_secs(2));
        assert!(!plan.due() && !plan.claiming());
        plan.slot_freed(false);
        assert!(plan.due());
    }

    #[test]
    fn with_nothing_wanted_no_claim_starts_and_the_look_timer_moves_out() {
        let (mut plan, now) = plan();
        assert_eq!(plan.start(0, now, POLL), None);
        assert!(!plan.claiming() && !plan.due());
        assert_eq!(plan.next_look(), now + POLL);
    }

    #[test]
    fn a_known_due_time_brings_the_next_look_forward_never_back() {
        let (mut plan, now) = plan();
        plan.look_at(now + POLL);
        plan.look_by(now + Duration::from_secs(3));
        assert_eq!(plan.next_look(), now + Duration::from_secs(3));
        plan.look_by(now + Duration::from_secs(10));
        assert_eq!(plan.next_look(), now + Duration::from_secs(3));
    }
}
