//! Upgrading a live database: a database that an older host filled with jobs in every
//! state is migrated under it. The older host's attempts in flight still finish with
//! their leases (by its own statement or the new host's), what it finished reads the
//! same, and a new host drains everything runnable.
//!
//! The older host is the one before migrations 0020 (claims and batched outcomes planned
//! without statistics) and 0021 (spare-slot claims), the hot-path migrations of issues
//! #21 and #22: its claim is the seven-argument `sluice.claim`, and its batched outcomes
//! are its own statements, kept verbatim under `v19/`.

use std::time::Duration;

use sluice_store::{
    AttemptOutcome, Completion, JOBS_CHANNEL, JobState, Lease, MIGRATOR, NewJob, RunAt, Store,
    StoreError,
};
use sqlx::{PgPool, Row};
use uuid::Uuid;

use crate::common::{self, JOB, ONCE, OTHER_TENANT, TENANT};

/// The last migration the older host knew.
const OLD_VERSION: i64 = 19;
const OLD_COMPLETE: &str = include_str!("v19/complete_many.sql");
const OLD_FAIL: &str = include_str!("v19/fail_many.sql");

/// Enqueues one job and claims it as the older host did; the claim must
/// hand back that job (make these before any backlog of the same type).
async fn old_running(store: &Store, pool: &PgPool, payload: &str) -> Lease {
    let id = store
        .enqueue(&NewJob::new(TENANT, JOB, payload.as_bytes()))
        .await
        .unwrap()
        .id;
    let claimed: Vec<(i64, Uuid)> = sqlx::query_as(
        "SELECT id, lease_token FROM sluice.claim('old-host', 1, 60000000, \
         ARRAY[$1], ARRAY[$2], 255::smallint, '{}'::text[])",
    )
    .bind(TENANT)
    .bind(JOB)
    .fetch_all(pool)
    .await
    .unwrap();
    assert_eq!(claimed.iter().map(|c| c.0).collect::<Vec<_>>(), [id]);
    Lease {
        job_id: id,
        token: claimed[0].1,
    }
}

/// The older host's batched completion, for one attempt: whether it applied.
async fn old_complete(pool: &PgPool, lease: Lease, output: &[u8]) -> bool {
    let applied: Vec<i64> = sqlx::query_scalar(OLD_COMPLETE)
        .bind(vec![lease.job_id])
        .bind(vec![lease.token])
        .bind(vec![output.to_vec()])
        .bind(vec![Some(1_000_i64)])
        .bind(None::<Vec<Vec<u8>>>)
        .bind(vec![0_i64])
        .fetch_all(pool)
        .await
        .unwrap();
    applied == [lease.job_id]
}

/// The older host's batched failure, for one attempt: where the job went.
async fn old_fail(pool: &PgPool, lease: Lease, error: &str, fatal: bool) -> JobState {
    let row = sqlx::query(OLD_FAIL)
        .bind(vec![lease.job_id])
        .bind(vec![lease.token])
        .bind(vec![error.to_owned()])
        .bind(vec![fatal])
        .bind(vec![1e6_f64])
        .bind(vec![1e6_f64])
        .bind(vec![0.0_f64])
        .bind(vec![None::<i64>])
        .bind(JOBS_CHANNEL)
        .bind(None::<Vec<Vec<u8>>>)
        .bind(vec![0_i64])
        .fetch_one(pool)
        .await
        .unwrap();
    row.get("state")
}

/// `common::setup` as the older host made it: its job types inserted with the columns
/// its schema has (today's upsert names columns added since).
async fn old_setup(pool: &PgPool) -> Store {
    let store = Store::new(pool.clone());
    for tenant in [common::TENANT, common::OTHER_TENANT] {
        store.create_tenant(tenant).await.unwrap();
        let component = store
            .put_component(&sluice_store::NewComponent {
                tenant: tenant.into(),
                name: "mailer".into(),
                version: None,
                bytes: b"\0asm fake component".to_vec(),
                contract: 1,
            })
            .await
            .unwrap();
        for (name, attempts) in [(common::JOB, 3), (common::ONCE, 1)] {
            sqlx::query(
                "INSERT INTO sluice.job_types (tenant, name, component_id, max_attempts) \
                 VALUES ($1, $2, $3, $4)",
            )
            .bind(tenant)
            .bind(name)
            .bind(component.id)
            .bind(attempts)
            .execute(pool)
            .await
            .unwrap();
        }
    }
    store
}

#[sqlx::test(migrations = false)]
async fn an_older_hosts_database_full_of_jobs_upgrades_and_drains(pool: PgPool) {
    assert!(
        MIGRATOR.iter().any(|m| m.version > OLD_VERSION),
        "there are migrations after the older host's"
    );
    MIGRATOR.run_to(OLD_VERSION, &pool).await.unwrap();
    let store = old_setup(&pool).await;

    // The older host's work, in every state.
    let completed = old_running(&store, &pool, "completed").await;
    assert!(old_complete(&pool, completed, b"its output").await);
    let dead = old_running(&store, &pool, "dead").await;
    assert_eq!(
        old_fail(&pool, dead, "bad input", true).await,
        JobState::Dead
    );
    let retrying = old_running(&store, &pool, "retrying").await;
    let failed_once = old_fail(&pool, retrying, "try again", false).await;
    assert_eq!(failed_once, JobState::Pending);
    let in_flight = old_running(&store, &pool, "in flight").await;
    let handed_over = old_running(&store, &pool, "handed over").await;
    let abandoned = old_running(&store, &pool, "abandoned").await;
    common::expire_lease(&pool, abandoned.job_id).await;
    let cancelled = store.enqueue(&common::job("cancelled")).await.unwrap().id;
    // The older host's cancel (admin/cancel.sql before migration 0027 named `waiting`).
    let cancel = sqlx::query(
        "UPDATE sluice.jobs SET state = 'cancelled', finished_at = now(), \
         last_error = 'cancelled by operator', updated_at = now() \
         WHERE id = $1 AND state = 'pending'",
    )
    .bind(cancelled)
    .execute(&pool)
    .await
    .unwrap();
    assert_eq!(cancel.rows_affected(), 1);
    let delayed = common::job("delayed").with_run_at(RunAt::Delay(Duration::from_secs(3600)));
    let delayed = store.enqueue(&delayed).await.unwrap().id;
    let mut backlog: Vec<NewJob> = (0..200).map(|i| common::job(&format!("b{i}"))).collect();
    backlog.extend((0..20).map(|i| NewJob::new(TENANT, ONCE, format!("o{i}").as_bytes())));
    backlog.extend((0..20).map(|i| NewJob::new(OTHER_TENANT, JOB, format!("g{i}").as_bytes())));
    store.enqueue_many(&backlog).await.unwrap();

    // The new host migrates the live database.
    store.migrate().await.unwrap();
    let applied: i64 = sqlx::query_scalar("SELECT max(version) FROM _sqlx_migrations")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(applied, MIGRATOR.iter().map(|m| m.version).max().unwrap());

    // The older host, still running, finishes its attempt in flight with its own
    // statement; another of its leases is finished by the new host's.
    assert!(old_complete(&pool, in_flight, b"finished by the older host").await);
    store
        .complete(&handed_over, &Completion::default())
        .await
        .unwrap();
    // The abandoned attempt is taken back; its lease then fences its host out.
    let reaped = store.reap(100).await.unwrap();
    assert_eq!(
        reaped.iter().map(|r| r.id).collect::<Vec<_>>(),
        [abandoned.job_id]
    );
    let stale = store.complete(&abandoned, &Completion::default()).await;
    assert!(
        matches!(stale, Err(StoreError::LeaseLost { .. })),
        "{stale:?}"
    );
    common::make_due(&pool, retrying.job_id).await;

    // A new host drains every runnable job.
    let mut drained = 0;
    loop {
        let batch = store
            .claim(&common::claim_req("new-host", 64))
            .await
            .unwrap();
        if batch.is_empty() {
            break;
        }
        drained += batch.len();
        let outcomes: Vec<_> = batch
            .iter()
            .map(|job| (job.lease, Completion::default()))
            .collect();
        for result in store.complete_many(&outcomes).await.unwrap() {
            result.unwrap();
        }
    }
    assert_eq!(
        drained,
        backlog.len() + 2,
        "the backlog, the retry and the reaped job"
    );
    // The counts every read surface shows (`sluice stats`, the dashboard).
    let totals = store.stats(None).await.unwrap().totals;
    assert_eq!(totals.running, 0);
    assert_eq!(totals.pending, 1, "only the delayed job");
    assert_eq!(totals.completed, drained as i64 + 3);
    assert_eq!(totals.dead, 1);
    assert_eq!(totals.cancelled, 1);

    // What the older host finished reads the same after the upgrade.
    let done = store.get(None, completed.job_id).await.unwrap().unwrap();
    assert_eq!(done.state, JobState::Completed);
    assert_eq!(done.output.as_deref(), Some(&b"its output"[..]));
    let dead = store.get(None, dead.job_id).await.unwrap().unwrap();
    assert_eq!(dead.state, JobState::Dead);
    assert_eq!(dead.last_error.as_deref(), Some("bad input"));
    let finished = store.get(None, in_flight.job_id).await.unwrap().unwrap();
    assert_eq!(
        finished.output.as_deref(),
        Some(&b"finished by the older host"[..])
    );
    let later = store.get(None, delayed).await.unwrap().unwrap();
    assert_eq!(later.state, JobState::Pending);
    // The retried job's history holds the older host's failed attempt and the new
    // host's completed one.
    let history = store.attempts(None, retrying.job_id).await.unwrap();
    let summary: Vec<_> = history
        .iter()
        .map(|a| (a.attempt, a.worker.as_str(), a.outcome))
        .collect();
    assert_eq!(
        summary,
        [
            (1, "old-host", Some(AttemptOutcome::Retry)),
            (2, "new-host", Some(AttemptOutcome::Completed)),
        ]
    );
}
