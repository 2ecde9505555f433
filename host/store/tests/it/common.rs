//! Test fixtures: tenants with a component and job types ([`setup`]), a job factory that
//! puts a job straight into the state a test needs ([`jobs`]), and SQL helpers that move
//! database time around instead of sleeping.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sluice_store::{
    CancelResult, ClaimRequest, ClaimedJob, Completion, FailResult, Failure, JobTypeSpec,
    NewComponent, NewJob, RunAt, Store,
};
use sqlx::PgPool;

pub const TENANT: &str = "acme";
pub const OTHER_TENANT: &str = "globex";
/// max_attempts 3
pub const JOB: &str = "send-email";
/// max_attempts 1
pub const ONCE: &str = "charge-card";

/// A store with tenants `acme` and `globex`, each with job types `send-email` (3
/// attempts) and `charge-card` (1 attempt).
pub async fn setup(pool: &PgPool) -> Store {
    let store = Store::new(pool.clone());
    for tenant in [TENANT, OTHER_TENANT] {
        store.create_tenant(tenant).await.unwrap();
        let component = store
            .put_component(&NewComponent {
                tenant: tenant.into(),
                name: "mailer".into(),
                version: None,
                bytes: b"\0asm fake component".to_vec(),
                contract: 1,
            })
            .await
            .unwrap();
        store
            .set_job_type(&JobTypeSpec::new(tenant, JOB, component.id))
            .await
            .unwrap();
        let mut once = JobTypeSpec::new(tenant, ONCE, component.id);
        once.max_attempts = 1;
        store.set_job_type(&once).await.unwrap();
    }
    store
}

pub fn job(payload: &str) -> NewJob {
    NewJob::new(TENANT, JOB, payload.as_bytes())
}

pub fn claim_req(worker: &str, limit: u32) -> ClaimRequest {
    ClaimRequest {
        worker: worker.into(),
        limit,
        lease: Duration::from_secs(30),
        tenants: None,
        job_types: None,
        // Every contract: these tests store no real components.
        max_contract: u8::MAX,
        secret_keys: Vec::new(),
        skip_tenants: None,
    }
}

pub async fn claim_one(store: &Store, worker: &str) -> ClaimedJob {
    let mut jobs = store.claim(&claim_req(worker, 1)).await.unwrap();
    assert_eq!(jobs.len(), 1, "expected one due job");
    jobs.pop().unwrap()
}

/// The job factory over `store`: see [`Jobs`].
pub fn jobs(store: &Store) -> Jobs<'_> {
    Jobs {
        store,
        worker: "fixture".into(),
    }
}

/// Puts jobs into a state through the store's own transitions (enqueue, claim,
/// complete, fail, cancel), never a raw INSERT, so CHECK constraints and the attempt
/// history hold. A claim takes the highest-priority, oldest due job: the factory claims
/// only the job's own tenant and type and panics if that hands it another job, so make
/// claimed jobs (running, completed, dead) before pending ones of the same type.
pub struct Jobs<'a> {
    store: &'a Store,
    worker: String,
}

impl Jobs<'_> {
    /// Claims under this worker name (default `fixture`).
    pub fn worker(mut self, name: &str) -> Self {
        self.worker = name.to_owned();
        self
    }

    pub async fn pending(&self, job: NewJob) -> i64 {
        let enqueued = self.store.enqueue(&job).await.unwrap();
        assert!(enqueued.created, "job {job:?} met an idempotency key");
        enqueued.id
    }

    /// Pending, due `delay` from now (database time).
    pub async fn scheduled_in(&self, job: NewJob, delay: Duration) -> i64 {
        self.pending(job.with_run_at(RunAt::Delay(delay))).await
    }

    /// Enqueued and claimed with a 30 s lease: running, attempt 1.
    pub async fn running(&self, job: NewJob) -> ClaimedJob {
        let id = self.pending(job.clone()).await;
        let mut request = claim_req(&self.worker, 1);
        request.tenants = Some(vec![job.tenant.clone()]);
        request.job_types = Some(vec![job.job_type.clone()]);
        let mut claimed = self.store.claim(&request).await.unwrap();
        assert_eq!(
            claimed.iter().map(|c| c.id).collect::<Vec<_>>(),
            [id],
            "the fixture's claim must take the job it just enqueued: another due job of \
             {}/{} came first (make claimed jobs before pending ones)",
            job.tenant,
            job.job_type
        );
        claimed.pop().unwrap()
    }

    /// Run once and completed with `done`.
    pub async fn completed_with(&self, job: NewJob, done: Completion) -> i64 {
        let claimed = self.running(job).await;
        self.store.complete(&claimed.lease, &done).await.unwrap();
        claimed.id
    }

    /// Run once and completed with no output.
    pub async fn completed(&self, job: NewJob) -> i64 {
        self.completed_with(job, Completion::default()).await
    }

    /// Run once and failed permanently with `error`.
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

/// Moves the `finished_at` of finished jobs `ids` back by `age` (an SQL interval such as
/// `'4 days'`), as if they had finished that long ago.
pub async fn finished_ago(pool: &PgPool, ids: &[i64], age: &str) {
    let moved = sqlx::query(
        "UPDATE sluice.jobs SET finished_at = now() - $2::interval \
         WHERE id = ANY($1) AND finished_at IS NOT NULL",
    )
    .bind(ids)
    .bind(age)
    .execute(pool)
    .await
    .unwrap()
    .rows_affected();
    assert_eq!(moved as usize, ids.len(), "not all of {ids:?} are finished");
}

pub async fn db_now(pool: &PgPool) -> DateTime<Utc> {
    sqlx::query_scalar("SELECT now()")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Makes a pending job due now (instead of waiting for its backoff).
pub async fn make_due(pool: &PgPool, id: i64) {
    sqlx::query("UPDATE sluice.jobs SET run_at = now() WHERE id = $1 AND state = 'pending'")
        .bind(id)
        .execute(pool)
        .await
        .unwrap();
}

/// Makes a running job's lease expire (instead of waiting for it).
pub async fn expire_lease(pool: &PgPool, id: i64) {
    let n = sqlx::query(
        "UPDATE sluice.jobs SET locked_until = now() - interval '1 second' \
         WHERE id = $1 AND state = 'running'",
    )
    .bind(id)
    .execute(pool)
    .await
    .unwrap()
    .rows_affected();
    assert_eq!(n, 1, "job {id} is not running");
}

pub async fn count_jobs(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM sluice.jobs")
        .fetch_one(pool)
        .await
        .unwrap()
}
