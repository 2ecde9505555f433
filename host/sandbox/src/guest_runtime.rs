//! The dedicated tokio runtime guests execute on, and the slots that bound how many run at
//! once (the pooling allocator is sized to the same number).
//!
//! A busy guest occupies one of these worker threads, never the caller's runtime, so the
//! host's claim loop and heartbeats keep their latency. Busy guests take turns a slice
//! (epoch tick) at a time, and a guest that has just started goes first: new attempts
//! arrive on the runtime's shared queue, which each thread checks at every turn. Must
//! not know what a guest is: it runs futures and hands out slots.

use std::future::Future;
use std::sync::Arc;

use anyhow::Context as _;
use tokio::runtime::Runtime;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

pub(crate) struct GuestRuntime {
    /// Always `Some` until drop.
    runtime: Option<Runtime>,
    slots: Arc<Semaphore>,
}

impl GuestRuntime {
    pub(crate) fn new(threads: usize, slots: u32) -> anyhow::Result<GuestRuntime> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            // Check the shared (injection) queue, where `spawn` from the host's runtime
            // puts a new attempt, before the thread's own queue of yielded busy guests
            // at every turn. Tokio's default checks it every 2 to 127 turns: behind
            // spinning guests that is up to a slice per turn before a new guest starts
            // (issue #22, docs/fairness.md).
            .global_queue_interval(1)
            .thread_name("sluice-guest")
            .enable_time()
            // Guests' outbound HTTP (contract 0.2) runs its sockets here.
            .enable_io()
            .build()
            .context("build the guest runtime")?;
        Ok(GuestRuntime {
            runtime: Some(runtime),
            slots: Arc::new(Semaphore::new(slots as usize)),
        })
    }

    /// Waits for a free slot. `None` only if the slots were closed, which never happens
    /// while `self` is alive.
    pub(crate) async fn slot(&self) -> Option<OwnedSemaphorePermit> {
        self.slots.clone().acquire_owned().await.ok()
    }

    /// Runs `fut` on the guest runtime. Dropping the returned handle aborts the task.
    pub(crate) fn spawn<F>(&self, fut: F) -> Option<AbortOnDrop<F::Output>>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let runtime = self.runtime.as_ref()?;
        Some(AbortOnDrop(runtime.spawn(fut)))
    }
}

impl Drop for GuestRuntime {
    fn drop(&mut self) {
        // `Runtime`'s own drop blocks, which panics inside an async context (where the last
        // `Sandbox` clone is often dropped). Running guests are aborted, not waited for.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// A `JoinHandle` that aborts its task when dropped, so a caller that stops waiting for
/// an attempt also stops the guest.
pub(crate) struct AbortOnDrop<T>(JoinHandle<T>);

impl<T> AbortOnDrop<T> {
    pub(crate) async fn join(mut self) -> Result<T, tokio::task::JoinError> {
        (&mut self.0).await
    }
}

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}
