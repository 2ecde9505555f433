//! The journal of a durable job's host calls (`docs/durable.md`): every result the guest
//! observes through a journaled import (clocks, random, `wasi:http`, `secrets.get`,
//! `jobs.enqueue`) is an entry `(seq, kind, request, result)`. An attempt answers the
//! first entries from what earlier attempts recorded ([`DurableGrant::recorded`]) instead
//! of calling, compares each call with the recorded one (another kind or request ends the
//! attempt `fatal`: [`JournalFailure::Diverged`]), then runs live and records.
//!
//! New entries are buffered here and made durable through the host's [`JournalSink`] (the
//! worker's fenced append): before each outbound request leaves, when its response has
//! arrived, and when the attempt completes (`run.rs`). A failure of the sink (the lease is
//! lost, the journal is over its cap, the database is unreachable) stops the attempt.
//!
//! Must not know Postgres (the sink does), decide what a call does (the capability that
//! wraps its call here does), or block on the sink in a synchronous call (clock and random
//! reads only buffer).

pub(crate) mod clocks;
pub(crate) mod codec;
pub(crate) mod waits;

pub use waits::{ChildOutcome, ChildState, WaitFuture};

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// One journaled host call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalEntry {
    /// From 0, in the order the guest made its calls.
    pub seq: u32,
    /// `wall-clock`, `monotonic-clock`, `random`, `http`, `secret`, `enqueue`.
    pub kind: String,
    /// The request's fingerprint, compared on replay (for `http`: method, URL without
    /// its query, and a hash of the whole URL and body).
    pub request: String,
    /// For people: `200, 12 bytes`, `found`, `16 bytes`, ...
    pub summary: String,
    /// The result as the guest got it (`codec.rs`).
    pub result: Vec<u8>,
}

/// Why the host could not make entries durable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JournalError {
    /// The attempt's lease is gone (reaped, cancelled): it must stop, writing nothing.
    LeaseLost,
    /// The journal would pass its cap; the message names the cap.
    OverCap(String),
    /// The database could not be reached.
    Unavailable(String),
}

/// The future a [`JournalSink`] returns.
pub type PersistFuture<'a> = Pin<Box<dyn Future<Output = Result<(), JournalError>> + Send + 'a>>;

/// Where the host makes new entries durable (the worker: one fenced append per call),
/// and what a durable run's waits read (the worker: fenced statements on the job).
pub trait JournalSink: Send + Sync {
    /// Appends `entries` (consecutive, continuing what is stored) under the attempt's lease.
    fn persist<'a>(&'a self, entries: &'a [JournalEntry]) -> PersistFuture<'a>;

    /// Takes the signal `name` sent to the job for the call at `seq`: the one an earlier
    /// run took at this `seq` if any (a run that failed before journaling it gets it
    /// again), else the oldest not yet taken; its payload as JSON text (`null` when sent
    /// without one). `None`: no such signal (yet). Under the attempt's lease.
    fn take_signal<'a>(&'a self, name: &'a str, seq: u32) -> WaitFuture<'a, Option<Vec<u8>>>;

    /// How each of `ids` (this job's follow-up jobs) ended, in the order of `ids`; `None`
    /// for one that has not finished (or does not exist yet).
    fn children<'a>(&'a self, ids: &'a [u64]) -> WaitFuture<'a, Vec<Option<ChildOutcome>>>;
}

/// A durable attempt: its job, what earlier attempts recorded, where new entries go.
#[derive(Clone)]
pub struct DurableGrant {
    /// The job's id (the `Idempotency-Key` of its requests derives from it).
    pub job_id: u64,
    /// The journal so far, in order (seq 0, 1, ...).
    pub recorded: Vec<JournalEntry>,
    /// Where the attempt's new entries are written, before the guest sees them.
    pub sink: Arc<dyn JournalSink>,
}

impl fmt::Debug for DurableGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DurableGrant")
            .field("job_id", &self.job_id)
            .field("recorded", &self.recorded.len())
            .finish_non_exhaustive()
    }
}

/// Why a durable attempt had to stop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum JournalFailure {
    /// A call differed from the recorded one at `seq`.
    Diverged {
        seq: u32,
        recorded: String,
        called: String,
    },
    /// The sink refused or failed.
    Sink(JournalError),
}

impl fmt::Display for JournalFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JournalFailure::Diverged {
                seq,
                recorded,
                called,
            } => write!(
                f,
                "replay diverged at call {seq}: the journal recorded {recorded}, this run called {called}"
            ),
            JournalFailure::Sink(JournalError::LeaseLost) => {
                f.write_str("the lease was lost while journaling")
            }
            JournalFailure::Sink(JournalError::OverCap(cap)) => write!(f, "{cap}"),
            JournalFailure::Sink(JournalError::Unavailable(why)) => {
                write!(f, "cannot journal: {why}")
            }
        }
    }
}

impl JournalFailure {
    /// True when retrying cannot help (divergence, the cap).
    pub(crate) fn is_fatal(&self) -> bool {
        matches!(
            self,
            JournalFailure::Diverged { .. } | JournalFailure::Sink(JournalError::OverCap(_))
        )
    }
}

/// What a call gets from the journal.
pub(crate) enum Step {
    /// Answer with this recorded result.
    Replay(Vec<u8>),
    /// Call live, then [`Journal::record`] the result at this seq.
    Live(u32),
    /// The call differs from the recorded one (the attempt is failing).
    Diverged,
}

/// The counts a durable attempt reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JournalCounts {
    /// Calls answered from the journal.
    pub replayed: u32,
    /// Calls made live and recorded.
    pub recorded: u32,
    /// The seq of the last HTTP call this attempt made live: a failed attempt gives the
    /// journal back from there (`docs/durable.md`), so that call runs again.
    pub last_live_http: Option<u32>,
}

struct State {
    recorded: Vec<JournalEntry>,
    /// The next call's seq.
    next: u32,
    /// Live entries not yet durable, by seq; `None`: reserved (a request in flight).
    pending: BTreeMap<u32, Option<JournalEntry>>,
    /// Entries below this seq are durable (or were replayed).
    durable: u32,
    failure: Option<JournalFailure>,
    counts: JournalCounts,
    /// The monotonic clock: last value returned, and the offset live reads get.
    pub(crate) last_monotonic: u64,
    pub(crate) monotonic_offset: Option<u64>,
}

struct Inner {
    job_id: u64,
    sink: Arc<dyn JournalSink>,
    state: Mutex<State>,
    /// Set with `failure`, read by the epoch callback without the lock.
    failed: AtomicBool,
    /// One flush at a time, in seq order.
    flushing: tokio::sync::Mutex<()>,
}

/// One durable attempt's journal, shared by every journaled capability (cheap to clone).
#[derive(Clone)]
pub(crate) struct Journal(Arc<Inner>);

impl Journal {
    pub(crate) fn new(grant: &DurableGrant) -> Journal {
        let next = grant.recorded.len() as u32;
        Journal(Arc::new(Inner {
            job_id: grant.job_id,
            sink: grant.sink.clone(),
            state: Mutex::new(State {
                recorded: grant.recorded.clone(),
                next: 0,
                pending: BTreeMap::new(),
                durable: next,
                failure: None,
                counts: JournalCounts::default(),
                last_monotonic: 0,
                monotonic_offset: None,
            }),
            failed: AtomicBool::new(false),
            flushing: tokio::sync::Mutex::new(()),
        }))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The job's id.
    pub(crate) fn job_id(&self) -> u64 {
        self.0.job_id
    }

    /// The `Idempotency-Key` of the request made as call `seq`: the same in every run.
    pub(crate) fn idempotency_key(&self, seq: u32) -> String {
        format!("sluice-{}-{seq}", self.0.job_id)
    }

    /// True once the attempt must stop (checked by the epoch callback).
    pub(crate) fn failed(&self) -> bool {
        self.0.failed.load(Ordering::Relaxed)
    }

    /// Why the attempt must stop, if it must.
    pub(crate) fn failure(&self) -> Option<JournalFailure> {
        self.lock().failure.clone()
    }

    pub(crate) fn counts(&self) -> JournalCounts {
        self.lock().counts
    }

    fn fail(&self, state: &mut State, failure: JournalFailure) {
        state.failure.get_or_insert(failure);
        self.0.failed.store(true, Ordering::Relaxed);
    }

    /// Reserves the next call's seq (a request whose fingerprint needs its body: the
    /// calls the guest makes meanwhile come after it); [`Journal::resolve`] it next.
    pub(crate) fn reserve(&self) -> u32 {
        let mut state = self.lock();
        state.next += 1;
        state.next - 1
    }

    /// The next call, of `kind` with fingerprint `request`: replayed, diverged, or live.
    pub(crate) fn step(&self, kind: &str, request: &str) -> Step {
        let seq = self.reserve();
        self.resolve(seq, kind, request)
    }

    /// Call `seq` (reserved), of `kind` with fingerprint `request`: replayed (the same
    /// call was recorded there), diverged (another was), or live (nothing was).
    pub(crate) fn resolve(&self, seq: u32, kind: &str, request: &str) -> Step {
        let mut state = self.lock();
        if let Some(entry) = state.recorded.get(seq as usize) {
            if entry.kind == kind && entry.request == request {
                let result = entry.result.clone();
                state.counts.replayed += 1;
                return Step::Replay(result);
            }
            let failure = JournalFailure::Diverged {
                seq,
                recorded: format!("{} {}", entry.kind, entry.request),
                called: format!("{kind} {request}"),
            };
            self.fail(&mut state, failure);
            return Step::Diverged;
        }
        if state.failure.is_some() {
            return Step::Diverged;
        }
        state.pending.insert(seq, None);
        Step::Live(seq)
    }

    /// Records the live result of call `seq`.
    pub(crate) fn record(
        &self,
        seq: u32,
        kind: &str,
        request: String,
        summary: String,
        result: Vec<u8>,
    ) {
        let mut state = self.lock();
        state.counts.recorded += 1;
        if kind == "http" {
            state.counts.last_live_http = Some(seq);
        }
        let entry = JournalEntry {
            seq,
            kind: kind.to_owned(),
            request,
            summary,
            result,
        };
        state.pending.insert(seq, Some(entry));
    }

    /// A synchronous call (clock, random): replayed or made live by `live` and recorded.
    /// On divergence the live value is returned (the attempt is stopping).
    pub(crate) fn call(
        &self,
        kind: &str,
        request: &str,
        live: impl FnOnce() -> (Vec<u8>, String),
    ) -> Vec<u8> {
        match self.step(kind, request) {
            Step::Replay(result) => result,
            Step::Diverged => live().0,
            Step::Live(seq) => {
                let (result, summary) = live();
                self.record(seq, kind, request.to_owned(), summary, result.clone());
                result
            }
        }
    }

    /// At the completion of a replaying run: every recorded call must have been made
    /// again (a run that completes before reaching the end of the journal took another
    /// path: it diverged).
    pub(crate) fn check_consumed(&self) -> Result<(), JournalFailure> {
        let mut state = self.lock();
        let next = state.next as usize;
        let Some(entry) = state.recorded.get(next) else {
            return Ok(());
        };
        let failure = JournalFailure::Diverged {
            seq: next as u32,
            recorded: format!("{} {}", entry.kind, entry.request),
            called: "nothing: it completed".to_owned(),
        };
        self.fail(&mut state, failure.clone());
        Err(failure)
    }

    /// Makes every complete entry below `upto` (all, when `None`) durable, in order,
    /// stopping at a call still in flight. A refusal fails the attempt and is returned.
    pub(crate) async fn flush(&self, upto: Option<u32>) -> Result<(), JournalFailure> {
        let _one = self.0.flushing.lock().await;
        let batch: Vec<JournalEntry> = {
            let mut state = self.lock();
            if let Some(failure) = &state.failure {
                return Err(failure.clone());
            }
            let mut batch = Vec::new();
            let mut seq = state.durable;
            while upto.is_none_or(|u| seq < u) {
                match state.pending.get(&seq) {
                    Some(Some(_)) => {
                        if let Some(Some(entry)) = state.pending.remove(&seq) {
                            batch.push(entry);
                        }
                        seq += 1;
                    }
                    _ => break,
                }
            }
            batch
        };
        if batch.is_empty() {
            return Ok(());
        }
        let last = batch.last().map_or(0, |e| e.seq);
        match self.0.sink.persist(&batch).await {
            Ok(()) => {
                self.lock().durable = last + 1;
                Ok(())
            }
            Err(error) => {
                let failure = JournalFailure::Sink(error);
                let mut state = self.lock();
                self.fail(&mut state, failure.clone());
                Err(failure)
            }
        }
    }

    /// Runs `f` on the state (the clocks keep the monotonic offset there).
    pub(crate) fn with_state<R>(&self, f: impl FnOnce(&mut MonotonicState<'_>) -> R) -> R {
        let mut state = self.lock();
        let State {
            last_monotonic,
            monotonic_offset,
            ..
        } = &mut *state;
        f(&mut MonotonicState {
            last: last_monotonic,
            offset: monotonic_offset,
        })
    }
}

/// The monotonic clock's memory across replay and live reads.
pub(crate) struct MonotonicState<'a> {
    pub last: &'a mut u64,
    pub offset: &'a mut Option<u64>,
}
