//! The job factory tests build on (feature `testkit`, for tests only): [`Jobs`] puts a
//! job straight into the state a test needs — pending, scheduled, running (claimed, with
//! a lease), completed, dead, cancelled — through the store's own transitions (enqueue,
//! claim, complete, fail, cancel), never a raw INSERT, so every CHECK constraint and the
//! attempt history stay as production leaves them. The store's tests (`tests/it`) and the
//! end-to-end tests (`tests/e2e`) both use it.
//!
//! A claim takes the highest-priority, oldest due job, so the factory claims only the
//! job's own tenant and type and panics if the claim handed it another job: create jobs
//! in claimed states (running, completed, dead) before pending ones of the same type
//! and priority, or give those a later `run_at`.
//!
//! Must not: run SQL of its own (every statement stays a file under `sql/`, used by the
//! store's methods), or be compiled into a release build (nothing enables `testkit`
//! outside dev-dependencies).

use std::time::Duration;

use crate::{
    CancelResult, ClaimRequest, ClaimedJob, Completion, FailResult, Failure, NewJob, RunAt, Store,
};

/// Creates jobs in a given state; see the module doc.
#[derive(Clone)]
pub struct Jobs<'a> {
    store: &'a Store,
    worker: String,
    lease: Duration,
    max_contract: u8,
}

impl<'a> Jobs<'a> {
    /// Claims as worker `fixture` with a 30 s lease, any component contract.
    pub fn new(store: &'a Store) -> Jobs<'a> {
        Jobs {
            store,
            worker: "fixture".into(),
            lease: Duration::from_secs(30),
            max_contract: u8::MAX,
        }
    }

    /// Claims under this worker name (what `locked_by` and the history record).
    pub fn worker(mut self, name: &str) -> Self {
        self.worker = name.to_owned();
        self
    }

    /// Claims with this lease.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// Claims only jobs whose component's contract minor is at most `minor` (what a
    /// host supporting contracts up to `minor` claims).
    pub fn max_contract(mut self, minor: u8) -> Self {
        self.max_contract = minor;
        self
    }

    /// Enqueued as given; returns its id.
    pub async fn pending(&self, job: NewJob) -> i64 {
        let enqueued = self.store.enqueue(&job).await.unwrap();
        assert!(enqueued.created, "job {job:?} met an idempotency key");
        enqueued.id
    }

    /// Pending, due `delay` from now (database time).
    pub async fn scheduled_in(&self, job: NewJob, delay: Duration) -> i64 {
        self.pending(job.with_run_at(RunAt::Delay(delay))).await
    }

    /// Enqueued and claimed: `running`, attempt 1 started, the lease held by the
    /// factory's worker. The claimed job (with its lease) is returned.
    pub async fn running(&self, job: NewJob) -> ClaimedJob {
        let id = self.pending(job.clone()).await;
        let request = ClaimRequest {
            worker: self.worker.clone(),
            limit: 1,
            lease: self.lease,
            tenants: Some(vec![job.tenant.clone()]),
            job_types: Some(vec![job.job_type.clone()]),
            max_contract: self.max_contract,
            secret_keys: Vec::new(),
            skip_tenants: None,
        };
        let mut claimed = self.store.claim(&request).await.unwrap();
        assert_eq!(
            claimed.iter().map(|c| c.id).collect::<Vec<_>>(),
            [id],
            "the fixture's claim must take the job it just enqueued: another due job of \
             {}/{} came first (create claimed jobs before pending ones)",
            job.tenant,
            job.job_type
        );
        claimed.pop().unwrap()
    }

    /// Run once and completed with `done` (output, fuel).
    pub async fn completed_with(&self, job: NewJob, done: Completion) -> i64 {
        let claimed = self.running(job).await;
        self.store.complete(&claimed.lease, &done).await.unwrap();
        claimed.id
    }

    /// Run once and completed with no output.
    pub async fn completed(&self, job: NewJob) -> i64 {
        self.completed_with(job, Completion::default()).await
    }

    /// Run once and failed permanently with `error` (its `last_error`).
    pub async fn dead(&self, job: NewJob, error: &str) -> i64 {
        let claimed = self.running(job).await;
        let result = self
            .store
            .fail(&claimed.lease, &Failure::fatal(error))
            .await
            .unwrap();
        assert_eq!(result, FailResult::Dead);
        claimed.id
    }

    /// Enqueued and cancelled before it ran.
    pub async fn cancelled(&self, job: NewJob) -> i64 {
        let id = self.pending(job).await;
        let result = self.store.cancel(None, id).await.unwrap();
        assert_eq!(result, CancelResult::Cancelled);
        id
    }
}
