//! An attempt of a durable job (`docs/durable.md`): before it runs, its journal is loaded
//! and its component pinned (the one the first attempt ran, whatever the type points at
//! since); the sandbox gets the journal with a [`StoreSink`], through which it appends
//! new entries under the attempt's lease (the store's fenced statement); a failed
//! attempt gives back its last live HTTP call ([`give_back`]).
//!
//! Nothing here runs for a type that is not durable: `executor` calls [`prepare`] only
//! when the resolved type says so. Must not speak SQL (the store does) or decide what is
//! journaled (the sandbox does).

use std::sync::Arc;

use anyhow::Context;
use sluice_sandbox::{
    ChildOutcome, ChildState, DurableGrant, Failure, JournalEntry, JournalError, JournalSink,
    Outcome, PersistFuture, RunReport, WaitFuture,
};
use sluice_store::{AppendError, JobState, Store, StoreError};
use tracing::warn;
use uuid::Uuid;

use super::completer::persist;
use super::journal_cap::JournalCap;
use super::registry::{Registry, ResolveError, ResolvedType};

/// Where a durable attempt's new entries go: the store's fenced append, run on the
/// worker's runtime (the sandbox calls from a guest thread, whose connections would die
/// with it).
struct StoreSink {
    store: Store,
    runtime: tokio::runtime::Handle,
    job_id: i64,
    lease: Uuid,
    component_id: i64,
    cap: JournalCap,
    /// How long a call is retried through transient database errors (a restart).
    patience: std::time::Duration,
}

impl JournalSink for StoreSink {
    fn persist<'a>(&'a self, entries: &'a [JournalEntry]) -> PersistFuture<'a> {
        let entries: Vec<sluice_store::JournalEntry> = entries
            .iter()
            .map(|e| sluice_store::JournalEntry {
                seq: i32::try_from(e.seq).unwrap_or(i32::MAX),
                kind: e.kind.clone(),
                request: e.request.clone(),
                summary: e.summary.clone(),
                result: e.result.clone(),
            })
            .collect();
        let (store, job_id, lease, component_id) = (
            self.store.clone(),
            self.job_id,
            self.lease,
            self.component_id,
        );
        let cap = i64::try_from(self.cap.bytes).unwrap_or(i64::MAX);
        let set_by = self.cap.set_by;
        let patience = self.patience;
        let append = self.runtime.spawn(async move {
            // Transient errors are retried (as `Err`); every other answer is kept (`Ok`).
            let written = persist(patience, || async {
                match store
                    .append_journal(job_id, lease, component_id, cap, &entries)
                    .await
                {
                    Err(AppendError::Store(e)) if e.is_transient() => Err(e),
                    other => Ok(other),
                }
            })
            .await;
            written.unwrap_or_else(|e| Err(AppendError::Store(e)))
        });
        Box::pin(async move {
            match append.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(AppendError::LeaseLost(_))) => Err(JournalError::LeaseLost),
                Ok(Err(AppendError::OverCap { bytes, cap })) => {
                    Err(JournalError::OverCap(format!(
                        "the journal would be {bytes} bytes, over its cap of {cap} bytes ({set_by})"
                    )))
                }
                Ok(Err(AppendError::Store(e))) => Err(JournalError::Unavailable(e.to_string())),
                Err(e) => Err(JournalError::Unavailable(e.to_string())),
            }
        })
    }

    fn take_signal<'a>(&'a self, name: &'a str, seq: u32) -> WaitFuture<'a, Option<Vec<u8>>> {
        let (store, job_id, lease) = (self.store.clone(), self.job_id, self.lease);
        let (name, patience) = (name.to_owned(), self.patience);
        let seq = i32::try_from(seq).unwrap_or(i32::MAX);
        let taken = self.runtime.spawn(async move {
            persist(patience, || store.take_signal(job_id, lease, &name, seq)).await
        });
        Box::pin(async move { on_runtime(taken.await) })
    }

    fn children<'a>(&'a self, ids: &'a [u64]) -> WaitFuture<'a, Vec<Option<ChildOutcome>>> {
        let (store, job_id, patience) = (self.store.clone(), self.job_id, self.patience);
        let wanted: Vec<i64> = ids
            .iter()
            .map(|&id| i64::try_from(id).unwrap_or(i64::MAX))
            .collect();
        let read = self.runtime.spawn(async move {
            persist(patience, || store.child_outcomes(job_id, &wanted)).await
        });
        Box::pin(async move {
            let finished = on_runtime(read.await)?;
            Ok(ids
                .iter()
                .map(|&id| {
                    let child = finished.iter().find(|c| c.id as u64 == id)?;
                    let state = match child.state {
                        JobState::Completed => ChildState::Completed,
                        JobState::Dead => ChildState::Dead,
                        JobState::Cancelled => ChildState::Cancelled,
                        _ => return None,
                    };
                    Some(ChildOutcome {
                        state,
                        output: child.output.clone(),
                        error: child.error.clone(),
                    })
                })
                .collect())
        })
    }
}

/// A store call run on the worker's runtime, as the journal's waits take it.
fn on_runtime<T>(
    joined: Result<Result<T, StoreError>, tokio::task::JoinError>,
) -> Result<T, JournalError> {
    match joined {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(StoreError::LeaseLost { .. })) => Err(JournalError::LeaseLost),
        Ok(Err(error)) => Err(JournalError::Unavailable(error.to_string())),
        Err(error) => Err(JournalError::Unavailable(error.to_string())),
    }
}

/// `resolved` made ready for an attempt of durable job `job_id` under `lease`: the
/// pinned component if the job has one, and the journal grant. `(component_id, cap)` is
/// the resolved type's `durable`; the journal's statements are retried through transient
/// database errors for up to `patience` (the completer's).
pub(super) async fn prepare(
    registry: &Arc<Registry>,
    mut resolved: ResolvedType,
    (component_id, cap): (i64, JournalCap),
    (job_id, lease): (i64, Uuid),
    patience: std::time::Duration,
) -> Result<ResolvedType, ResolveError> {
    let store = registry.store().clone();
    let loaded = store
        .load_journal(job_id)
        .await
        .context("load the job's journal")?;
    let pinned = loaded.component_id.unwrap_or(component_id);
    if pinned != component_id {
        resolved.component = registry.component(pinned).await?;
    }
    let recorded = loaded
        .entries
        .into_iter()
        .map(|e| JournalEntry {
            seq: u32::try_from(e.seq).unwrap_or(0),
            kind: e.kind,
            request: e.request,
            summary: e.summary,
            result: e.result,
        })
        .collect();
    let sink = StoreSink {
        store,
        runtime: tokio::runtime::Handle::current(),
        job_id,
        lease,
        component_id: pinned,
        cap,
        patience,
    };
    resolved.grants.durable = Some(Arc::new(DurableGrant {
        job_id: u64::try_from(job_id).unwrap_or(0),
        recorded,
        sink: Arc::new(sink),
    }));
    Ok(resolved)
}

/// After a durable attempt that failed by itself (the guest's `retry`, a trap, a timeout:
/// not a journal failure, not a cancel), gives the journal back from its last live HTTP
/// call, so the next attempt makes that call again (with the same `Idempotency-Key`)
/// instead of replaying the response that made it fail. Fenced by the lease; a failure
/// to give back is logged and leaves the journal as it is (the next attempt replays it).
pub(super) async fn give_back(store: &Store, report: &RunReport, job_id: i64, lease: Uuid) {
    let Some(seq) = report.journal.and_then(|j| j.last_live_http) else {
        return;
    };
    let by_itself = matches!(
        &report.outcome,
        Outcome::Failed(f) if !matches!(f, Failure::Journal { .. } | Failure::Cancelled)
    );
    if !by_itself {
        return;
    }
    let from = i32::try_from(seq).unwrap_or(i32::MAX);
    if let Err(error) = store.truncate_journal(job_id, lease, from).await {
        warn!(%error, job_id, "could not give back the failed attempt's last HTTP call");
    }
}
