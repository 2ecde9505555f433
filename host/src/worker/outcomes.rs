//! Batched outcomes: attempts that completed or failed hand their outcome to one flusher
//! task, which writes every outcome waiting at that moment in at most two fenced
//! statements (`Store::complete_many`, `Store::fail_many`) and answers each attempt with
//! its own result.
//!
//! No timer: a flush starts as soon as the previous one ends, so an idle worker adds no
//! latency and a busy one batches whatever piled up during the last round-trip. An
//! attempt is told its outcome only after the statement that wrote it committed; a stale
//! lease inside a batch comes back as `LeaseLost` for that job alone.
//!
//! Must not: decide outcomes (the attempt does), or write anything but completions and
//! failures (releases and cancels are rare and stay one statement each).

use std::time::Duration;

use sluice_store::{Completion, FailResult, Failure, Lease, Store, StoreError};
use tokio::sync::{mpsc, oneshot};
use tracing::warn;

/// Most outcomes written by one flush.
const MAX_BATCH: usize = 512;

type Reply<T> = oneshot::Sender<Result<T, StoreError>>;

enum Pending {
    Complete(Lease, Completion, Reply<()>),
    Fail(Lease, Failure, Reply<FailResult>),
}

/// Where attempts send their outcomes. Cheap to clone.
#[derive(Clone)]
pub struct Outcomes {
    queue: mpsc::UnboundedSender<Pending>,
}

impl Outcomes {
    /// Starts the flusher. `patience` bounds how long one batch is retried through
    /// transient database errors (the lease: past it, the reaper owns the jobs).
    pub fn start(store: Store, patience: Duration) -> Outcomes {
        let (queue, inbox) = mpsc::unbounded_channel();
        tokio::spawn(flush_loop(store, inbox, patience));
        Outcomes { queue }
    }

    /// Completes one job; resolves once the outcome is committed (or refused).
    pub async fn complete(&self, lease: Lease, completion: Completion) -> Result<(), StoreError> {
        let (reply, answer) = oneshot::channel();
        self.send(lease, answer, Pending::Complete(lease, completion, reply))
            .await
    }

    /// Fails one job (retry, dead or cancelled: the store decides); resolves once the
    /// outcome is committed (or refused).
    pub async fn fail(&self, lease: Lease, failure: Failure) -> Result<FailResult, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.send(lease, answer, Pending::Fail(lease, failure, reply))
            .await
    }

    async fn send<T>(
        &self,
        lease: Lease,
        answer: oneshot::Receiver<Result<T, StoreError>>,
        pending: Pending,
    ) -> Result<T, StoreError> {
        if self.queue.send(pending).is_err() {
            return Err(StoreError::InvalidInput {
                field: "outcome",
                message: "the worker's outcome flusher has stopped".into(),
            });
        }
        match answer.await {
            Ok(result) => result,
            Err(_) => Err(StoreError::LeaseLost {
                job_id: lease.job_id,
            }),
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
            let written =
                super::attempt::persist(patience, || store.complete_many(&completions.outcomes))
                    .await;
            completions.answer(written);
        }
        if !failures.is_empty() {
            let written =
                super::attempt::persist(patience, || store.fail_many(&failures.outcomes)).await;
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

    /// Tells every attempt of the batch its own result (or the batch's error).
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
