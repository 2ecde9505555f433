//! The completer: the one place a worker writes a held job's end — complete, fail,
//! release or cancel — through the store's fenced statements, and learns where the job
//! went ([`AttemptOutcome`], as the statement decided it).
//!
//! Completions and failures go to one flusher task, which writes every outcome waiting
//! at that moment in at most two statements (`Store::complete_many`, `Store::fail_many`)
//! and answers each attempt with its own result. No timer: a flush starts as soon as the
//! previous one ends, so an idle worker adds no latency and a busy one batches whatever
//! piled up during the last round-trip. Releases and cancels are rare and stay one
//! statement each. Every write retries transient database errors for up to `patience`
//! (the lease: past it, the reaper owns the job anyway), so an attempt that already ran
//! is not given up because Postgres blinked.
//!
//! Must not: decide outcomes (`executor::transition` does), claim, or heartbeat.

use std::time::Duration;

use sluice_store::{
    AttemptLog, AttemptOutcome, Backoff, Completion, FailResult, Failure, Lease, Store, StoreError,
    Suspended, Suspension,
};
use tokio::sync::{mpsc, oneshot};
use tracing::warn;

/// Most outcomes written by one flush.
const MAX_BATCH: usize = 512;

/// What became of a held job, as the store reported it (`None`: nothing was recorded,
/// because the lease was lost or the database stayed unreachable past the lease).
pub type Recorded = Option<AttemptOutcome>;

/// The write that ends a held job's attempt (decided by `executor::transition`).
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Transition {
    /// running → completed, with its follow-up jobs. The backoff is for the one case a
    /// completion becomes a failure: its follow-ups were refused when inserted.
    Complete(Completion, Backoff),
    /// running → pending (retry), dead or cancelled: the store decides.
    Fail(Failure),
    /// running → pending without using the attempt, or cancelled if a cancel is pending.
    Release(&'static str),
    /// running → cancelled; the reason becomes `last_error`, the log (if any) is stored.
    Cancel(std::borrow::Cow<'static, str>, Option<AttemptLog>),
    /// running → waiting or pending without using the attempt (a durable wait, a
    /// snooze); the failure is written instead when the store refuses the snooze (over
    /// the limit).
    Suspend(Suspension, Failure),
}

impl Transition {
    /// This transition, storing what the attempt logged with its end (a release keeps
    /// no log: the attempt is given back as if it had not run).
    pub(super) fn with_log(self, log: Option<AttemptLog>) -> Transition {
        match self {
            Transition::Complete(done, backoff) => {
                Transition::Complete(Completion { log, ..done }, backoff)
            }
            Transition::Fail(failure) => Transition::Fail(Failure { log, ..failure }),
            Transition::Cancel(reason, _) => Transition::Cancel(reason, log),
            Transition::Suspend(suspension, failure) => Transition::Suspend(
                Suspension {
                    log: log.clone(),
                    ..suspension
                },
                Failure { log, ..failure },
            ),
            release @ Transition::Release(_) => release,
        }
    }
}

type Reply<T> = oneshot::Sender<Result<T, StoreError>>;

enum Pending {
    Complete(Lease, Completion, Reply<()>),
    Fail(Lease, Failure, Reply<FailResult>),
}

/// Where held jobs' outcomes are written. Cheap to clone.
#[derive(Clone)]
pub(super) struct Completer {
    store: Store,
    queue: mpsc::UnboundedSender<Pending>,
    patience: Duration,
}

/// Why an outcome was not written.
enum Unwritten {
    Refused(StoreError),
    /// The flusher task is gone (it panicked); nothing was written.
    FlusherGone,
}

impl From<StoreError> for Unwritten {
    fn from(error: StoreError) -> Self {
        Unwritten::Refused(error)
    }
}

impl Completer {
    /// How long one write is retried through transient database errors (the lease).
    pub(super) fn patience(&self) -> Duration {
        self.patience
    }

    /// Starts the flusher. `patience` bounds how long one write is retried through
    /// transient database errors.
    pub(super) fn start(store: Store, patience: Duration) -> Completer {
        let (queue, inbox) = mpsc::unbounded_channel();
        tokio::spawn(flush_loop(store.clone(), inbox, patience));
        Completer {
            store,
            queue,
            patience,
        }
    }

    /// Writes `transition` for the job held under `lease`; where the job went, or `None`
    /// (logged) if nothing could be written.
    pub(super) async fn record(&self, lease: Lease, transition: Transition) -> Recorded {
        let written = match transition {
            Transition::Complete(done, backoff) => {
                let (fuel_used, log) = (done.fuel_used, done.log.clone());
                match self
                    .batched(|reply| Pending::Complete(lease, done, reply))
                    .await
                {
                    Ok(()) => Ok(AttemptOutcome::Completed),
                    // Its follow-ups could not be inserted (their type was deleted since
                    // the guest asked): nothing was written, the job is still running
                    // under this lease, and the attempt fails instead.
                    Err(Unwritten::Refused(StoreError::FollowUpRefused { message, .. })) => {
                        let failure = Failure {
                            error: format!("follow-up jobs refused: {message}"),
                            fatal: false,
                            backoff,
                            fuel_used,
                            log,
                        };
                        self.batched(|reply| Pending::Fail(lease, failure, reply))
                            .await
                            .map(FailResult::outcome)
                    }
                    Err(unwritten) => Err(unwritten),
                }
            }
            Transition::Fail(failure) => self
                .batched(|reply| Pending::Fail(lease, failure, reply))
                .await
                .map(FailResult::outcome),
            Transition::Release(reason) => {
                persist(self.patience, || self.store.release(&lease, reason))
                    .await
                    .map_err(Unwritten::from)
            }
            Transition::Cancel(reason, log) => persist(self.patience, || {
                self.store.mark_cancelled(&lease, &reason, log.as_ref())
            })
            .await
            .map_err(Unwritten::from),
            Transition::Suspend(suspension, over_limit) => {
                match persist(self.patience, || self.store.suspend(&lease, &suspension)).await {
                    Ok(Suspended::SnoozeLimit { limit }) => {
                        let over_limit = Failure {
                            error: over_snooze_limit(limit),
                            ..over_limit
                        };
                        self.batched(|reply| Pending::Fail(lease, over_limit, reply))
                            .await
                            .map(FailResult::outcome)
                    }
                    Ok(Suspended::Cancelled) => Ok(AttemptOutcome::Cancelled),
                    Ok(Suspended::Waiting | Suspended::Pending) => Ok(AttemptOutcome::Suspended),
                    Err(error) => Err(Unwritten::from(error)),
                }
            }
        };
        let job_id = lease.job_id;
        match written {
            Ok(outcome) => Some(outcome),
            Err(Unwritten::Refused(StoreError::LeaseLost { .. })) => {
                warn!(
                    job_id,
                    "lease lost before the outcome was written; outcome dropped"
                );
                None
            }
            Err(Unwritten::Refused(error)) => {
                warn!(job_id, %error, "cannot record the outcome; the lease will expire and the reaper will return the job");
                None
            }
            Err(Unwritten::FlusherGone) => {
                warn!(
                    job_id,
                    "the outcome flusher has stopped; the lease will expire and the reaper will return the job"
                );
                None
            }
        }
    }

    async fn batched<T>(&self, pending: impl FnOnce(Reply<T>) -> Pending) -> Result<T, Unwritten> {
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(pending(reply))
            .map_err(|_| Unwritten::FlusherGone)?;
        match answer.await {
            Ok(result) => result.map_err(Unwritten::Refused),
            Err(_) => Err(Unwritten::FlusherGone),
        }
    }
}

async fn flush_loop(store: Store, mut inbox: mpsc::UnboundedReceiver<Pending>, patience: Duration) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while inbox.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let mut completions = Batch::default();
        let mut failures = Batch::default();
        for pending in batch.drain(..) {
            match pending {
                Pending::Complete(lease, done, reply) => completions.push(lease, done, reply),
                Pending::Fail(lease, failure, reply) => failures.push(lease, failure, reply),
            }
        }
        if !completions.is_empty() {
            let written = persist(patience, || store.complete_many(&completions.outcomes)).await;
            completions.answer(written);
        }
        if !failures.is_empty() {
            let written = persist(patience, || store.fail_many(&failures.outcomes)).await;
            failures.answer(written);
        }
    }
}

/// Outcomes of one kind in a flush, and whom to tell.
struct Batch<O, T> {
    outcomes: Vec<(Lease, O)>,
    replies: Vec<Reply<T>>,
}

impl<O, T> Default for Batch<O, T> {
    fn default() -> Self {
        Batch {
            outcomes: Vec::new(),
            replies: Vec::new(),
        }
    }
}

impl<O, T> Batch<O, T> {
    fn push(&mut self, lease: Lease, outcome: O, reply: Reply<T>) {
        self.outcomes.push((lease, outcome));
        self.replies.push(reply);
    }

    fn is_empty(&self) -> bool {
        self.replies.is_empty()
    }

    /// Tells every attempt of the batch its own result, or the batch's error shared (it
    /// keeps `is_transient`).
    fn answer(self, written: Result<Vec<Result<T, StoreError>>, StoreError>) {
        match written {
            Ok(results) => {
                for (reply, result) in self.replies.into_iter().zip(results) {
                    let _ = reply.send(result);
                }
            }
            Err(error) => {
                warn!(%error, count = self.replies.len(), "cannot record a batch of outcomes");
                let shared = error.shared();
                for reply in self.replies {
                    let _ = reply.send(Err(StoreError::Shared(shared.clone())));
                }
            }
        }
    }
}

/// Makes a store call that records an outcome, retrying transient database errors (a
/// restart, a dropped connection) with backoff until `patience` runs out.
pub(super) async fn persist<T, F, Fut>(patience: Duration, mut call: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    let deadline = tokio::time::Instant::now() + patience;
    let mut pause = Duration::from_millis(50);
    loop {
        match call().await {
            Err(error)
                if error.is_transient() && tokio::time::Instant::now() + pause < deadline =>
            {
                warn!(%error, "cannot reach the database to record an outcome; retrying in {pause:?}");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(5));
            }
            other => return other,
        }
    }
}

/// The failure of a snooze past `limit` (retryable: the job falls back to its retries).
pub(super) fn over_snooze_limit(limit: i32) -> String {
    format!(
        "snoozed more than {limit} times (the most one job of this type may snooze: `sluice types set T --max-snoozes N`)"
    )
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn persist_retries_transient_errors_until_the_call_succeeds() {
        let calls = AtomicU32::new(0);
        let result = persist(Duration::from_secs(60), || async {
            match calls.fetch_add(1, Ordering::SeqCst) {
                0 | 1 => Err(StoreError::Database(sqlx_timeout())),
                _ => Ok(7),
            }
        })
        .await;
        assert_eq!(result.unwrap(), 7);
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn persist_gives_up_at_once_on_a_lost_lease_and_after_its_patience_on_outages() {
        let calls = AtomicU32::new(0);
        let lost = persist(Duration::from_secs(60), || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err::<(), _>(StoreError::LeaseLost { job_id: 1 })
        })
        .await;
        assert!(matches!(lost, Err(StoreError::LeaseLost { .. })));
        assert_eq!(calls.load(Ordering::SeqCst), 1);

        let down = persist(Duration::from_secs(2), || async {
            Err::<(), _>(StoreError::Database(sqlx_timeout()))
        })
        .await;
        assert!(down.unwrap_err().is_transient());
    }

    #[tokio::test(start_paused = true)]
    async fn persist_retries_a_batch_error_shared_by_its_items_when_it_is_transient() {
        let calls = AtomicU32::new(0);
        let shared = StoreError::Database(sqlx_timeout()).shared();
        let result = persist(Duration::from_secs(60), || async {
            match calls.fetch_add(1, Ordering::SeqCst) {
                0 => Err(StoreError::Shared(shared.clone())),
                _ => Ok(()),
            }
        })
        .await;
        assert!(result.is_ok());
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    fn sqlx_timeout() -> sqlx::Error {
        sqlx::Error::PoolTimedOut
    }
}
