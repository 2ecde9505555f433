//! Batched completion: attempts that succeeded hand their outcome to one flusher task,
//! which writes every outcome waiting at that moment in one fenced statement
//! (`Store::complete_many`) and answers each attempt with its own result.
//!
//! No timer: a flush starts as soon as the previous one ends, so an idle worker adds no
//! latency and a busy one batches whatever piled up during the last round-trip. An
//! attempt is told "completed" only after the statement that completed it committed;
//! a stale lease inside a batch comes back as `LeaseLost` for that job alone.
//!
//! Must not: decide outcomes (the attempt does), or write anything but completions
//! (failures, releases and cancels are rare and stay one statement each).

use std::time::Duration;

use sluice_store::{Completion, Lease, Store, StoreError};
use tokio::sync::{mpsc, oneshot};
use tracing::warn;

/// Most outcomes written by one statement.
const MAX_BATCH: usize = 512;

struct Pending {
    lease: Lease,
    completion: Completion,
    reply: oneshot::Sender<Result<(), StoreError>>,
}

/// Where attempts send their completions. Cheap to clone.
#[derive(Clone)]
pub struct Completions {
    queue: mpsc::UnboundedSender<Pending>,
}

impl Completions {
    /// Starts the flusher. `patience` bounds how long one batch is retried through
    /// transient database errors (the lease: past it, the reaper owns the jobs).
    pub fn start(store: Store, patience: Duration) -> Completions {
        let (queue, inbox) = mpsc::unbounded_channel();
        tokio::spawn(flush_loop(store, inbox, patience));
        Completions { queue }
    }

    /// Completes one job; resolves once the outcome is committed (or refused).
    pub async fn complete(&self, lease: Lease, completion: Completion) -> Result<(), StoreError> {
        let (reply, answer) = oneshot::channel();
        let pending = Pending {
            lease,
            completion,
            reply,
        };
        if self.queue.send(pending).is_err() {
            return Err(StoreError::InvalidInput {
                field: "completion",
                message: "the worker's completion flusher has stopped".into(),
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
        let (outcomes, replies): (Vec<(Lease, Completion)>, Vec<_>) = batch
            .drain(..)
            .map(|p| ((p.lease, p.completion), p.reply))
            .unzip();
        let written = super::attempt::persist(patience, || store.complete_many(&outcomes)).await;
        match written {
            Ok(results) => {
                for (reply, result) in replies.into_iter().zip(results) {
                    let _ = reply.send(result);
                }
            }
            Err(error) => {
                warn!(%error, count = replies.len(), "cannot record a batch of completions");
                for reply in replies {
                    let _ = reply.send(Err(copy_error(&error)));
                }
            }
        }
    }
}

/// `StoreError` is not `Clone` (it wraps `sqlx::Error`); each attempt in a failed batch
/// gets an error that keeps what it branches on.
fn copy_error(error: &StoreError) -> StoreError {
    StoreError::InvalidInput {
        field: "completion",
        message: format!("batch not recorded: {error}"),
    }
}
