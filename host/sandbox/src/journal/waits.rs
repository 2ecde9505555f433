//! The journal's side of a durable run's waits (`sluice:task/durable`): instants fixed by
//! the first run (a sleep's wake-up, a wait's deadline: journaled, so a replay counts
//! from the same instant), and the questions a wait asks the host through the sink (the
//! signal it takes, how the awaited jobs ended), which stop the attempt when the sink
//! fails, as a refused append does.
//!
//! Must not: decide whether to wait or suspend (the `durable` capability does).

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{Journal, JournalError, JournalFailure};

/// The future a [`super::JournalSink`]'s wait questions return.
pub type WaitFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, JournalError>> + Send + 'a>>;

/// How an awaited job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChildState {
    /// Its last attempt returned `ok`.
    Completed,
    /// It failed for good.
    Dead,
    /// An operator cancelled it.
    Cancelled,
}

/// The final state of one awaited job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildOutcome {
    /// How it ended.
    pub state: ChildState,
    /// Its output when completed.
    pub output: Option<Vec<u8>>,
    /// Its last error, if it has one and did not complete.
    pub error: Option<String>,
}

/// Now, in milliseconds since the Unix epoch (UTC).
pub(crate) fn now_ms() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

impl Journal {
    /// The instant `after_ms` from the first run's call (milliseconds since the epoch),
    /// journaled as `kind` with fingerprint `request` and replayed by later runs.
    pub(crate) fn instant(&self, kind: &str, request: &str, after_ms: u64) -> i64 {
        let bytes = self.call(kind, request, || {
            let at = now_ms().saturating_add(i64::try_from(after_ms).unwrap_or(i64::MAX));
            let at_time = UNIX_EPOCH + Duration::from_millis(u64::try_from(at).unwrap_or(0));
            let summary = humantime::format_rfc3339_millis(at_time).to_string();
            (at.to_be_bytes().to_vec(), summary)
        });
        bytes
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, i64::from_be_bytes)
    }

    /// The sink's [`super::JournalSink::take_signal`]; a failure stops the attempt.
    pub(crate) async fn take_signal(
        &self,
        name: &str,
        seq: u32,
    ) -> Result<Option<Vec<u8>>, JournalFailure> {
        let answer = self.0.sink.take_signal(name, seq).await;
        self.failing(answer)
    }

    /// The sink's [`super::JournalSink::children`]; a failure stops the attempt.
    pub(crate) async fn children(
        &self,
        ids: &[u64],
    ) -> Result<Vec<Option<ChildOutcome>>, JournalFailure> {
        let answer = self.0.sink.children(ids).await;
        self.failing(answer)
    }

    fn failing<T>(&self, answer: Result<T, JournalError>) -> Result<T, JournalFailure> {
        answer.map_err(|error| {
            let failure = JournalFailure::Sink(error);
            let mut state = self.lock();
            self.fail(&mut state, failure.clone());
            failure
        })
    }
}
