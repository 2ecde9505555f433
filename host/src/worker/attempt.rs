//! One attempt of one claimed job: resolve its type, run it in the sandbox, and record
//! the outcome through the store's fenced operations.
//!
//! Owns the mapping from sandbox outcomes to queue transitions (complete, retry, dead,
//! cancelled, released) and the rule that a late outcome of a lost lease is logged and
//! dropped. It must not decide queue policy itself (backoff, attempt counting): the
//! store's statements do that.

use std::sync::{Arc, Mutex};

use std::time::Duration;

use sluice_sandbox::{Failure as SandboxFailure, JobInput, Outcome, RunReport};
use sluice_store::{
    AttemptOutcome, Backoff, ClaimedJob, Completion, Failure, Lease, Store, StoreError,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, info, info_span, warn};

use super::outcomes::Outcomes;
use super::registry::ResolveError;
use super::slots::AttemptContext;

/// Why a running attempt is being interrupted. The first reason set wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// An operator cancelled the job: it ends `cancelled`.
    Cancelled,
    /// The host is shutting down: the job is released without using up the attempt.
    Shutdown,
    /// The lease was lost (another worker may hold the job): record nothing.
    LeaseLost,
}

/// The handle the worker loop keeps for each running attempt.
#[derive(Clone, Default)]
pub struct Interrupt {
    token: CancellationToken,
    reason: Arc<Mutex<Option<StopReason>>>,
}

impl Interrupt {
    /// Ask the attempt to stop; the sandbox interrupts the guest within one epoch tick.
    pub fn stop(&self, reason: StopReason) {
        self.reason
            .lock()
            .expect("interrupt lock")
            .get_or_insert(reason);
        self.token.cancel();
    }

    fn reason(&self) -> Option<StopReason> {
        *self.reason.lock().expect("interrupt lock")
    }
}

/// What became of an attempt, as the store reported it (`None`: nothing was recorded,
/// because the lease was lost or the database stayed unreachable past the lease).
pub type Recorded = Option<AttemptOutcome>;

/// Dropped when an attempt's sandbox run ends (or the attempt ends before reaching it):
/// tells the worker loop the job's slot is free while its outcome is still being written.
pub struct Executing {
    ran: mpsc::UnboundedSender<i64>,
    job_id: i64,
}

impl Executing {
    pub(super) fn new(ran: mpsc::UnboundedSender<i64>, job_id: i64) -> Executing {
        Executing { ran, job_id }
    }
}

impl Drop for Executing {
    fn drop(&mut self) {
        // The loop may be gone (shutdown budget spent); nothing left to tell then.
        let _ = self.ran.send(self.job_id);
    }
}

/// Run one claimed job to the end and record what happened. Recording may retry through
/// database outages for up to `ctx.lease` (past it, the reaper owns the job anyway).
pub(super) async fn run_attempt(
    ctx: AttemptContext,
    job: ClaimedJob,
    interrupt: Interrupt,
    executing: Executing,
) -> Recorded {
    let AttemptContext {
        store,
        outcomes,
        registry,
        lease: patience,
        metrics,
    } = ctx;
    let _in_progress = metrics.attempt_started();
    let ClaimedJob {
        id,
        tenant,
        job_type,
        payload,
        attempt,
        max_attempts,
        lease,
        ..
    } = job;
    // Made only where something is logged: the fmt layer formats a span's fields when it
    // is created, which cost a few per cent of the worker's CPU when made for every job.
    let span = || info_span!("job", id, tenant = %tenant, r#type = %job_type, attempt);
    let record = Recorder {
        store: &store,
        outcomes: &outcomes,
        lease,
        patience,
    };
    let recorded = match registry.resolve(&tenant, &job_type).await {
        Err(error) => {
            drop(executing);
            not_runnable(&record, error).instrument(span()).await
        }
        Ok(resolved) => {
            let input = JobInput {
                id: id as u64,
                job_type: job_type.clone(),
                tenant: tenant.clone(),
                attempt: attempt as u32,
                max_attempts: max_attempts as u32,
                payload,
            };
            let report = registry
                .sandbox()
                .run(
                    &resolved.component,
                    input,
                    &resolved.limits,
                    interrupt.token.clone(),
                )
                .await;
            drop(executing);
            metrics.sandbox_ran(&tenant, &job_type, &report);
            let fuel_used = Some(report.fuel_used.min(i64::MAX as u64) as i64);
            let RunReport {
                outcome,
                logs,
                logs_truncated,
                ..
            } = report;
            // The common case (completed, no guest output) logs nothing: no span for it.
            let quiet = logs.is_empty() && matches!(outcome, Outcome::Completed { .. });
            let recording = async {
                log_guest_output(&logs, logs_truncated);
                record_outcome(&record, outcome, &interrupt, resolved.backoff, fuel_used).await
            };
            if quiet {
                recording.await
            } else {
                recording.instrument(span()).await
            }
        }
    };
    metrics.attempt_recorded(&tenant, &job_type, attempt, recorded);
    recorded
}

/// A job whose type cannot be run: dead if the type is gone for good, released (attempt
/// given back) if the registry could not be read.
async fn not_runnable(record: &Recorder<'_>, error: ResolveError) -> Recorded {
    match error {
        ResolveError::Permanent(message) => record.fail(Failure::fatal(message)).await,
        ResolveError::Infrastructure(error) => {
            warn!(error = %format!("{error:#}"), "cannot resolve job type; releasing the job");
            record.release("infrastructure: job type unavailable").await
        }
    }
}

/// Records what the sandbox reported: the queue transition for each outcome.
async fn record_outcome(
    record: &Recorder<'_>,
    outcome: Outcome,
    interrupt: &Interrupt,
    backoff: Backoff,
    fuel_used: Option<i64>,
) -> Recorded {
    match outcome {
        Outcome::Completed { output } => record.complete(Completion { output, fuel_used }).await,
        Outcome::Failed(SandboxFailure::Cancelled) => match interrupt.reason() {
            Some(StopReason::Shutdown) => record.release("host shutting down").await,
            Some(StopReason::LeaseLost) => {
                warn!("lease lost while running; outcome dropped");
                None
            }
            Some(StopReason::Cancelled) | None => record.cancelled().await,
        },
        Outcome::Failed(failure) => {
            let failure = Failure {
                error: failure.reason(),
                fatal: failure.is_fatal(),
                backoff,
                fuel_used,
            };
            record.fail(failure).await
        }
    }
}

/// Gives back a job that was claimed (prefetched) but never started: the host is
/// shutting down. The attempt is not used up.
pub(super) async fn release_unstarted(ctx: AttemptContext, lease: Lease) -> Recorded {
    let record = Recorder {
        store: &ctx.store,
        outcomes: &ctx.outcomes,
        lease,
        patience: ctx.lease,
    };
    record
        .release("host shutting down before the attempt started")
        .await
}

/// Writes one attempt's outcome through the store's fenced statements. Every write goes
/// through [`persist`], so none of them gives up an attempt that already ran because the
/// database blinked; a lost lease is logged and the outcome dropped.
struct Recorder<'a> {
    store: &'a Store,
    /// Completions and failures go through the batched flusher, which does its own
    /// outage retry.
    outcomes: &'a Outcomes,
    lease: Lease,
    patience: Duration,
}

impl Recorder<'_> {
    async fn complete(&self, done: Completion) -> Recorded {
        let written = self.outcomes.complete(self.lease, done).await;
        self.recorded(written.map(|()| AttemptOutcome::Completed))
    }

    async fn fail(&self, failure: Failure) -> Recorded {
        info!(error = %failure.error, fatal = failure.fatal, "attempt failed");
        let written = self.outcomes.fail(self.lease, failure).await;
        self.recorded(written.map(|result| result.outcome()))
    }

    async fn release(&self, reason: &str) -> Recorded {
        let written = persist(self.patience, || self.store.release(&self.lease, reason)).await;
        // Released, or cancelled if a cancel was requested meanwhile: the store says.
        self.recorded(written)
    }

    async fn cancelled(&self) -> Recorded {
        let written = persist(self.patience, || {
            self.store.mark_cancelled(&self.lease, "cancelled")
        })
        .await;
        self.recorded(written)
    }

    fn recorded(&self, written: Result<AttemptOutcome, StoreError>) -> Recorded {
        let job_id = self.lease.job_id;
        match written {
            Ok(outcome) => Some(outcome),
            Err(StoreError::LeaseLost { .. }) => {
                warn!(
                    job_id,
                    "lease lost before the outcome was written; outcome dropped"
                );
                None
            }
            Err(error) => {
                warn!(job_id, %error, "cannot record the outcome; the lease will expire and the reaper will return the job");
                None
            }
        }
    }
}

/// Make a store call that records an outcome, retrying transient database errors (a
/// restart, a dropped connection) with backoff until `patience` runs out: an attempt that
/// already ran must not be given up because Postgres blinked.
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

fn log_guest_output(logs: &[u8], truncated: bool) {
    if logs.is_empty() {
        return;
    }
    let text = String::from_utf8_lossy(logs);
    for line in text.lines() {
        info!(target: "sluice::guest", "{line}");
    }
    if truncated {
        info!(target: "sluice::guest", "(log truncated at the per-attempt cap)");
    }
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

    fn sqlx_timeout() -> sqlx::Error {
        sqlx::Error::PoolTimedOut
    }
}
