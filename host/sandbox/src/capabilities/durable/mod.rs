//! Durable jobs (`docs/durable.md`): the capability whose grant makes an attempt durable
//! ([`DurableGrant`]: the job's journal so far and the host's sink) and whose state holds
//! the attempt's [`Journal`], which the journaled capabilities (`http`, `secrets`,
//! `jobs`) and the WASI clocks and generators (`wasi_ctx.rs`) share through
//! [`Attempt::journal`]; and `sluice:task/durable@0.3.0`, the waits: `sleep`,
//! `await-signal`, `await-jobs` (`wit/v0.3/task.wit` says what each does in a durable
//! type and in one that is not).
//!
//! A wait that cannot be answered now suspends the run ([`RunShared::suspend`]): entries
//! journaled so far are made durable first, the call itself is not journaled, so the next
//! run replays up to it and asks again. Must not: make entries durable by itself (the
//! journal's flushes do, through the sink), or hold a slot for a wait that may be long
//! (only a sleep below [`IN_PLACE_SLEEP`] that ends before the attempt's deadline
//! sleeps in place).

mod codec;

use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::component::{HasSelf, Linker};

use super::shape::{Attempt, Capability, StoreData};
use crate::contract::Contract;
use crate::host_imports::v0_3::sluice::task::durable::{self as v0_3, ChildOutcome, WaitError};
use crate::journal::waits::now_ms;
use crate::journal::{DurableGrant, Journal, Step};
use crate::suspend::{RunShared, Suspension};

/// A durable sleep this short (or shorter) that ends before the attempt's deadline
/// sleeps in place; a longer one suspends the run (docs/durable.md).
pub(crate) const IN_PLACE_SLEEP: Duration = Duration::from_secs(1);

/// Longest signal name (characters), as `sluice.signal` accepts.
const MAX_SIGNAL_NAME: usize = 128;

/// Most jobs one `await-jobs` call may list.
const MAX_AWAITED: usize = 1000;

/// The capability (see [`Capability`]).
pub(crate) struct Durable;

/// One attempt's journal (`None`: not durable) and what its waits need.
pub(crate) struct DurableState {
    pub(crate) journal: Option<Journal>,
    run: RunShared,
    deadline: Option<Instant>,
}

impl Capability for Durable {
    type Grant = DurableGrant;
    type State = DurableState;

    fn state(_grant: Option<Arc<DurableGrant>>, attempt: &Attempt<'_>) -> DurableState {
        // The journal is made from the grant before every other capability's state
        // (`store.rs`), so that they share it.
        DurableState {
            journal: attempt.journal.cloned(),
            run: attempt.run.clone(),
            deadline: attempt.deadline,
        }
    }

    fn add_to_linker<T: StoreData>(
        linker: &mut Linker<T>,
        max: Contract,
        get: fn(&mut T) -> &mut DurableState,
    ) -> wasmtime::Result<()> {
        if max >= Contract::V0_3 {
            v0_3::add_to_linker::<T, HasSelf<DurableState>>(linker, get)?;
        }
        Ok(())
    }
}

/// A sleep in a type that is not durable that would outlast the attempt: it fails at
/// once (retryable, like a timeout), naming the sleep and the time left.
#[derive(Debug)]
pub(crate) struct SleepPastDeadline {
    pub(crate) asked: Duration,
    pub(crate) left: Duration,
}

impl std::fmt::Display for SleepPastDeadline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a sleep of {} would outlast the attempt's timeout ({} left)",
            humantime::format_duration(self.asked),
            humantime::format_duration(round_ms(self.left)),
        )
    }
}

impl std::error::Error for SleepPastDeadline {}

fn round_ms(d: Duration) -> Duration {
    Duration::from_millis(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The error a host call returns once the journal has failed (`run.rs` reads why).
fn journal_stopped() -> wasmtime::Error {
    wasmtime::Error::msg("the journal stopped the attempt")
}

impl DurableState {
    /// The time left before the attempt's deadline (`None`: no deadline).
    fn left(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// Sleeps `asked` in place, or fails the attempt at once if that outlasts it.
    async fn sleep_in_place(&self, asked: Duration) -> wasmtime::Result<()> {
        if let Some(left) = self.left()
            && asked >= left
        {
            return Err(wasmtime::Error::new(SleepPastDeadline { asked, left }));
        }
        tokio::time::sleep(asked).await;
        Ok(())
    }

    /// Makes every entry so far durable, then suspends the run for `why`.
    async fn suspend(&self, journal: &Journal, why: Suspension) -> wasmtime::Error {
        match journal.flush(None).await {
            Ok(()) => self.run.suspend(why),
            Err(_) => journal_stopped(),
        }
    }
}

impl v0_3::Host for DurableState {
    async fn sleep(&mut self, duration_ms: u64) -> wasmtime::Result<()> {
        let asked = Duration::from_millis(duration_ms);
        let Some(journal) = self.journal.clone() else {
            return self.sleep_in_place(asked).await;
        };
        if duration_ms == 0 {
            return Ok(());
        }
        let until_ms = journal.instant("sleep", &format!("{duration_ms}ms"), duration_ms);
        let left_ms = until_ms.saturating_sub(now_ms());
        if left_ms <= 0 {
            return Ok(());
        }
        let wait = Duration::from_millis(left_ms.unsigned_abs());
        if wait <= IN_PLACE_SLEEP && self.left().is_none_or(|left| wait < left) {
            tokio::time::sleep(wait).await;
            return Ok(());
        }
        Err(self.suspend(&journal, Suspension::Sleep { until_ms }).await)
    }

    async fn await_signal(
        &mut self,
        name: String,
        timeout_ms: Option<u64>,
    ) -> wasmtime::Result<Result<Option<Vec<u8>>, WaitError>> {
        let Some(journal) = self.journal.clone() else {
            return Ok(Err(WaitError::NotDurable));
        };
        let length = name.chars().count();
        if length == 0 || length > MAX_SIGNAL_NAME || name.chars().any(char::is_control) {
            return Ok(Err(WaitError::Invalid(format!(
                "a signal name is 1 to {MAX_SIGNAL_NAME} characters, none of them control \
                 characters ({length} given)"
            ))));
        }
        let deadline_ms =
            timeout_ms.map(|t| journal.instant("signal-deadline", &format!("{name} {t}ms"), t));
        let seq = match journal.step("signal", &name) {
            Step::Replay(result) => return Ok(Ok(codec::decode_signal(&result))),
            Step::Diverged => return Err(journal_stopped()),
            Step::Live(seq) => seq,
        };
        if journal.flush(Some(seq)).await.is_err() {
            return Err(journal_stopped());
        }
        let Ok(taken) = journal.take_signal(&name, seq).await else {
            return Err(journal_stopped());
        };
        let timed_out = deadline_ms.is_some_and(|d| d <= now_ms());
        if taken.is_none() && !timed_out {
            let why = Suspension::Signal { name, deadline_ms };
            return Err(self.suspend(&journal, why).await);
        }
        let (bytes, summary) = codec::encode_signal(taken.as_deref());
        journal.record(seq, "signal", name, summary, bytes);
        if journal.flush(None).await.is_err() {
            return Err(journal_stopped());
        }
        Ok(Ok(taken))
    }

    async fn await_jobs(
        &mut self,
        ids: Vec<u64>,
    ) -> wasmtime::Result<Result<Vec<ChildOutcome>, WaitError>> {
        let Some(journal) = self.journal.clone() else {
            return Ok(Err(WaitError::NotDurable));
        };
        if let Err(why) = self.check_awaited(&ids) {
            return Ok(Err(WaitError::Invalid(why)));
        }
        if ids.is_empty() {
            return Ok(Ok(Vec::new()));
        }
        let seq = match journal.step("await-jobs", &codec::ids_fingerprint(&ids)) {
            Step::Replay(result) => {
                return match codec::decode_children(&ids, &result) {
                    Some(outcomes) => Ok(Ok(outcomes)),
                    None => Err(wasmtime::Error::msg("a journaled await-jobs is unreadable")),
                };
            }
            Step::Diverged => return Err(journal_stopped()),
            Step::Live(seq) => seq,
        };
        if journal.flush(Some(seq)).await.is_err() {
            return Err(journal_stopped());
        }
        let Ok(children) = journal.children(&ids).await else {
            return Err(journal_stopped());
        };
        let Some(finished) = children.into_iter().collect::<Option<Vec<_>>>() else {
            return Err(self.suspend(&journal, Suspension::Jobs { ids }).await);
        };
        let (bytes, summary) = codec::encode_children(&finished);
        journal.record(
            seq,
            "await-jobs",
            codec::ids_fingerprint(&ids),
            summary,
            bytes,
        );
        if journal.flush(None).await.is_err() {
            return Err(journal_stopped());
        }
        Ok(Ok(codec::outcomes(&ids, finished)))
    }
}

impl DurableState {
    /// `ids` are this job's follow-up jobs, each listed once, and not too many.
    fn check_awaited(&self, ids: &[u64]) -> Result<(), String> {
        if ids.len() > MAX_AWAITED {
            return Err(format!(
                "at most {MAX_AWAITED} jobs per await-jobs ({} given)",
                ids.len()
            ));
        }
        for (i, id) in ids.iter().enumerate() {
            if !self.run.was_enqueued(*id) {
                return Err(format!(
                    "job {id} is not a follow-up job this job enqueued (await-jobs accepts only ids jobs.enqueue returned to it)"
                ));
            }
            if ids[..i].contains(id) {
                return Err(format!("job {id} is listed twice"));
            }
        }
        Ok(())
    }
}
