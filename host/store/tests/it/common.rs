//! Test fixtures: tenants with a component and job types ([`setup`]), the job factory
//! that puts a job straight into the state a test needs ([`jobs`]: the crate's
//! `testkit::Jobs`), and SQL helpers that move database time around instead of sleeping.

use std::time::Duration;

use chrono::{DateTime, Utc};
pub use sluice_store::testkit::Jobs;
use sluice_store::{ClaimRequest, ClaimedJob, JobTypeSpec, NewComponent, NewJob, Store};
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

/// The job factory over `store` (claims as `fixture`, 30 s leases): see
/// [`Jobs`], the one the end-to-end tests use too.
pub fn jobs(store: &Store) -> Jobs<'_> {
    Jobs::new(store)
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
