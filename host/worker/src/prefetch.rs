//! How many claimed jobs a worker keeps queued ahead of its free slots: [`Prefetch`]
//! (the operator's choice: `auto`, the default, or a fixed depth, `0` for none) and
//! [`PrefetchSizer`], which turns `auto` into a depth from what the worker observes.
//!
//! The rule for `auto`: a queue is worth holding only to cover the wait for the next
//! claim. A claim starts when the queue has fallen to half its depth, so the half must
//! last one claim round trip: depth ≈ completion rate × [`HORIZON_PER_RTT`] × claim
//! round trip, with the round trip clamped to [`MIN_HORIZON`] ..= [`MAX_HORIZON`]. Both
//! figures are moving averages, and the rate decays as soon as completions stop (slots
//! held by long jobs), so:
//! - a backlog of short jobs grows the queue to what keeps the slots busy (bounded by
//!   [`MAX_AUTO_DEPTH`]);
//! - jobs that run for seconds get no queue at all (rate × 100 ms < 1): one worker
//!   cannot hoard long jobs while another idles;
//! - the queue holds at most about [`MAX_HORIZON`] of expected work, far below the
//!   prefetch lease (30 s by default, at least 1 s), so a queued job starts long before
//!   its lease needs the heartbeat.
//!
//! Pure: no I/O, no clock (the caller passes `now`), so every rule is a unit test. Must
//! not claim or start anything (`slots`, `producer`).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use tokio::time::Instant;

/// The deepest queue `auto` ever sizes.
pub const MAX_AUTO_DEPTH: usize = 1_000;
/// The queue covers this many claim round trips of completions.
const HORIZON_PER_RTT: u32 = 4;
/// The least time a queue covers (the completion side of a refill: a freed slot is
/// noticed, the claim is sent, its jobs are handed over).
const MIN_HORIZON: Duration = Duration::from_millis(10);
/// The most time a queue covers, however slow claims get: the bound on hoarding.
const MAX_HORIZON: Duration = Duration::from_millis(100);
/// Completions are counted over windows of this length before they update the rate.
const WINDOW: Duration = Duration::from_millis(50);

/// How deep a worker's prefetch queue is: see the module comment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Prefetch {
    /// Sized by the worker from its completion rate and claim round trip.
    #[default]
    Auto,
    /// Exactly this many (0: claim only for free slots).
    Fixed(usize),
}

impl Prefetch {
    /// Whether claimed jobs may wait in a queue (they then take the prefetch lease).
    pub fn may_queue(self) -> bool {
        self != Prefetch::Fixed(0)
    }
}

impl fmt::Display for Prefetch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Prefetch::Auto => f.write_str("auto"),
            Prefetch::Fixed(n) => write!(f, "{n}"),
        }
    }
}

impl FromStr for Prefetch {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.eq_ignore_ascii_case("auto") {
            return Ok(Prefetch::Auto);
        }
        s.parse().map(Prefetch::Fixed).map_err(|_| {
            format!("{s:?} is not a prefetch depth: give `auto` or a number of jobs (0: none)")
        })
    }
}

impl serde::Serialize for Prefetch {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Prefetch::Auto => s.serialize_str("auto"),
            Prefetch::Fixed(n) => s.serialize_u64(*n as u64),
        }
    }
}

/// The current depth of a worker's queue; see the module comment.
#[derive(Clone, Debug)]
pub(super) struct PrefetchSizer {
    mode: Prefetch,
    /// Completions per second, a moving average over windows ([`WINDOW`]).
    rate: f64,
    /// The claim round trip, a moving average.
    rtt: Option<Duration>,
    window_start: Instant,
    window_completions: u32,
    last_completion: Option<Instant>,
    claim_started: Option<Instant>,
    /// Completions a window must hold before its rising rate counts early: twice the
    /// slots, which long jobs cannot reach (each slot ends at most one of them per
    /// window), so a burst of long jobs ending together is averaged over the window.
    early_after: u32,
    depth: usize,
}

impl PrefetchSizer {
    pub(super) fn new(mode: Prefetch, concurrency: usize, now: Instant) -> PrefetchSizer {
        PrefetchSizer {
            mode,
            rate: 0.0,
            rtt: None,
            window_start: now,
            window_completions: 0,
            last_completion: None,
            claim_started: None,
            early_after: u32::try_from(concurrency.saturating_mul(2)).unwrap_or(u32::MAX),
            depth: match mode {
                Prefetch::Auto => 0,
                Prefetch::Fixed(n) => n,
            },
        }
    }

    /// How many jobs to keep queued ahead of the free slots now.
    pub(super) fn depth(&self) -> usize {
        self.depth
    }

    /// A claim was sent.
    pub(super) fn claim_sent(&mut self, now: Instant) {
        self.claim_started = Some(now);
    }

    /// The claim sent last came back (with jobs or not, or failed).
    pub(super) fn claim_returned(&mut self, now: Instant) {
        let Some(started) = self.claim_started.take() else {
            return;
        };
        let took = now.saturating_duration_since(started);
        self.rtt = Some(match self.rtt {
            None => took,
            Some(avg) => (avg * 3 + took) / 4,
        });
    }

    /// `n` attempts left their slots (their guests are done).
    pub(super) fn completed(&mut self, n: u32, now: Instant) {
        self.window_completions += n;
        self.last_completion = Some(now);
    }

    /// Re-sizes with the time that has passed: the loop calls it before sizing a claim
    /// and at a stall check. Closes the window if it is over, and sizes the queue from
    /// the averages (only
    /// here: recording a completion or a round trip is a counter and a timestamp, so the
    /// per-attempt path does no arithmetic). When no
    /// completion has come for two windows (every slot holds a long job), one per that
    /// gap caps the rate, so the depth falls at the next look without waiting for a
    /// completion to close the window.
    pub(super) fn look(&mut self, now: Instant) {
        if self.mode != Prefetch::Auto {
            return;
        }
        let open = now.saturating_duration_since(self.window_start);
        let so_far = f64::from(self.window_completions) / open.as_secs_f64().max(1e-6);
        let mut rate = self.rate;
        if open >= WINDOW {
            self.rate = if self.rate == 0.0 {
                so_far
            } else {
                (self.rate + so_far) / 2.0
            };
            rate = self.rate;
            self.window_start = now;
            self.window_completions = 0;
        } else if open >= MIN_HORIZON && self.window_completions >= self.early_after {
            // A rate rising within the window counts at once (a worker that has just
            // met a backlog of short jobs grows its queue in milliseconds, not windows);
            // a falling one waits for the window to close.
            rate = rate.max(so_far);
        }
        let gap = now.saturating_duration_since(self.last_completion.unwrap_or(self.window_start));
        let rate = if gap >= 2 * WINDOW {
            rate.min(1.0 / gap.as_secs_f64())
        } else {
            rate
        };
        let horizon =
            (self.rtt.unwrap_or(MIN_HORIZON) * HORIZON_PER_RTT).clamp(MIN_HORIZON, MAX_HORIZON);
        self.depth = ((rate * horizon.as_secs_f64()) as usize).min(MAX_AUTO_DEPTH);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// Feeds `per_ms` completions every millisecond for `ms` milliseconds, with a
    /// claim of `rtt` every 10 ms.
    fn run(sizer: &mut PrefetchSizer, start: Instant, ms: u32, per_ms: u32, rtt: Duration) {
        for i in 0..ms {
            let now = start + MS * i;
            if i % 10 == 0 {
                sizer.look(now);
                sizer.claim_sent(now);
                sizer.claim_returned(now + rtt);
            }
            sizer.completed(per_ms, now);
        }
    }

    #[test]
    fn parses_auto_and_numbers_and_names_a_bad_value() {
        assert_eq!("auto".parse(), Ok(Prefetch::Auto));
        assert_eq!("AUTO".parse(), Ok(Prefetch::Auto));
        assert_eq!("0".parse(), Ok(Prefetch::Fixed(0)));
        assert_eq!("500".parse(), Ok(Prefetch::Fixed(500)));
        let bad = "lots".parse::<Prefetch>().unwrap_err();
        assert!(bad.contains("\"lots\"") && bad.contains("auto"), "{bad}");
        assert_eq!(Prefetch::Auto.to_string(), "auto");
        assert_eq!(Prefetch::Fixed(7).to_string(), "7");
        assert!(Prefetch::Auto.may_queue() && Prefetch::Fixed(1).may_queue());
        assert!(!Prefetch::Fixed(0).may_queue());
    }

    #[test]
    fn a_fixed_depth_never_moves() {
        let now = Instant::now();
        let mut sizer = PrefetchSizer::new(Prefetch::Fixed(64), 16, now);
        run(&mut sizer, now, 500, 20, 5 * MS);
        assert_eq!(sizer.depth(), 64);
        let mut none = PrefetchSizer::new(Prefetch::Fixed(0), 16, now);
        run(&mut none, now, 500, 20, 5 * MS);
        assert_eq!(none.depth(), 0);
    }

    #[test]
    fn auto_starts_with_no_queue() {
        let sizer = PrefetchSizer::new(Prefetch::Auto, 16, Instant::now());
        assert_eq!(sizer.depth(), 0);
    }

    #[test]
    fn short_jobs_grow_the_queue_to_cover_the_claim_round_trip() {
        let now = Instant::now();
        let mut sizer = PrefetchSizer::new(Prefetch::Auto, 16, now);
        // 10 completions a millisecond (10k/s), claims taking 5 ms: 4 × 5 ms = 20 ms.
        run(&mut sizer, now, 500, 10, 5 * MS);
        let depth = sizer.depth();
        assert!((150..=250).contains(&depth), "{depth}");
        // Slower claims cover a longer horizon, up to 100 ms.
        run(&mut sizer, now + 500 * MS, 500, 10, 40 * MS);
        let depth = sizer.depth();
        assert!((800..=MAX_AUTO_DEPTH).contains(&depth), "{depth}");
    }

    #[test]
    fn a_backlog_met_mid_window_grows_the_queue_within_milliseconds() {
        let now = Instant::now();
        let mut sizer = PrefetchSizer::new(Prefetch::Auto, 16, now);
        // 12 ms of 10 completions a millisecond, claims of 5 ms: the 50 ms window is
        // still open, but the rising rate counts already (4 × 5 ms of 10k/s).
        run(&mut sizer, now, 12, 10, 5 * MS);
        sizer.look(now + 12 * MS);
        let depth = sizer.depth();
        assert!((150..=250).contains(&depth), "{depth}");
    }

    #[test]
    fn long_jobs_ending_together_early_in_a_window_get_no_early_queue() {
        let now = Instant::now();
        let mut sizer = PrefetchSizer::new(Prefetch::Auto, 16, now);
        // All 16 slots' long jobs end within the first 10 ms of a window: 1,600/s over
        // those 10 ms, 320/s over the window. Only the window's figure counts.
        sizer.claim_sent(now);
        sizer.claim_returned(now + 2 * MS);
        sizer.completed(16, now + 9 * MS);
        sizer.look(now + 10 * MS);
        assert_eq!(sizer.depth(), 0, "the early figure must not count");
        sizer.look(now + 50 * MS);
        assert!(sizer.depth() <= 3, "{}", sizer.depth());
    }

    #[test]
    fn the_depth_never_passes_its_bound() {
        let now = Instant::now();
        let mut sizer = PrefetchSizer::new(Prefetch::Auto, 16, now);
        run(&mut sizer, now, 500, 200, 50 * MS);
        assert_eq!(sizer.depth(), MAX_AUTO_DEPTH);
    }

    #[test]
    fn long_jobs_get_no_queue() {
        let now = Instant::now();
        let mut sizer = PrefetchSizer::new(Prefetch::Auto, 16, now);
        // 16 slots of 2 s jobs: 8 completions a second, one every 125 ms.
        for i in 0..40u32 {
            let at = now + 125 * MS * i;
            sizer.look(at);
            sizer.claim_sent(at);
            sizer.claim_returned(at + 2 * MS);
            sizer.completed(1, at);
        }
        assert_eq!(sizer.depth(), 0);
    }

    #[test]
    fn when_completions_stop_the_queue_shrinks_at_the_next_look() {
        let now = Instant::now();
        let mut sizer = PrefetchSizer::new(Prefetch::Auto, 16, now);
        run(&mut sizer, now, 300, 10, 5 * MS);
        assert!(sizer.depth() > 100, "{}", sizer.depth());
        // Every slot now holds a long job: nothing completes for a second.
        sizer.look(now + Duration::from_millis(1_300));
        assert_eq!(sizer.depth(), 0);
    }
}
