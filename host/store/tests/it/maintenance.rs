//! Retention in the fleet: old finished jobs go, once per interval, and never from two
//! hosts at once (advisory lock).

use std::time::Duration;

use sluice_store::{MaintenanceRun, RETENTION_LOCK_KEY, RetentionPolicy, RunAt, Store};
use sqlx::postgres::PgPoolOptions;
use sqlx::{Connection as _, PgConnection, PgPool};

use crate::common::*;

const HOUR: Duration = Duration::from_secs(3600);

/// `n` completed jobs finished 4 days ago (past the default 3-day retention).
async fn old_completed(store: &Store, pool: &PgPool, n: usize) -> Vec<i64> {
    let jobs = jobs(store).worker("w");
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(jobs.completed(job(&i.to_string())).await);
    }
    finished_ago(pool, &ids, "4 days").await;
    ids
}

fn policy() -> RetentionPolicy {
    RetentionPolicy {
        batch_size: 7,
        ..RetentionPolicy::default()
    }
}

async fn host_store(pool: &PgPool) -> Store {
    let options = pool.connect_options().as_ref().clone();
    Store::new(
        PgPoolOptions::new()
            .max_connections(2)
            .connect_with(options)
            .await
            .unwrap(),
    )
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn prune_runs_once_per_interval_and_removes_old_finished_jobs(pool: PgPool) {
    let store = setup(&pool).await;
    old_completed(&store, &pool, 20).await;
    // Pending (and not due, so the fixture never claims it): never pruned.
    let young = store
        .enqueue(&job("young").with_run_at(RunAt::Delay(HOUR)))
        .await
        .unwrap()
        .id;

    let run = store.prune_if_due(&policy(), HOUR, "host-a").await.unwrap();
    let MaintenanceRun::Ran(report) = run else {
        panic!("expected a prune, got {run:?}");
    };
    assert_eq!((report.jobs.deleted, report.jobs.batches), (20, 3));
    assert_eq!(count_jobs(&pool).await, 1);
    assert!(store.get(None, young).await.unwrap().is_some());

    // Within the hour no host prunes again, even with new expired jobs.
    old_completed(&store, &pool, 3).await;
    let again = store.prune_if_due(&policy(), HOUR, "host-b").await.unwrap();
    assert_eq!(again, MaintenanceRun::NotDue);
    assert_eq!(count_jobs(&pool).await, 4);
    let (by, deleted): (String, i64) = sqlx::query_as(
        "SELECT started_by, last_deleted FROM sluice.maintenance_runs WHERE task = 'retention'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!((by.as_str(), deleted), ("host-a", 20));
}

/// Waits (up to 10 s) until no backend holds the session advisory lock `key`.
async fn until_no_session_holds(pool: &PgPool, key: i64) {
    for _ in 0..200 {
        let held: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted \
               AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
               AND ((classid::bigint << 32) | objid::bigint) = $1)",
        )
        .bind(key)
        .fetch_one(pool)
        .await
        .unwrap();
        if !held {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the closed session still holds advisory lock {key} after 10 s");
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_host_holding_the_lock_keeps_others_from_pruning(pool: PgPool) {
    let store = setup(&pool).await;
    old_completed(&store, &pool, 10).await;

    // Another host is pruning: it holds the advisory lock.
    let mut other = PgConnection::connect_with(&pool.connect_options())
        .await
        .unwrap();
    sqlx::query("SELECT pg_advisory_lock($1)")
        .bind(RETENTION_LOCK_KEY)
        .execute(&mut other)
        .await
        .unwrap();
    let run = store
        .prune_if_due(&policy(), Duration::ZERO, "host-a")
        .await
        .unwrap();
    assert_eq!(run, MaintenanceRun::Busy);
    assert_eq!(count_jobs(&pool).await, 10, "nothing pruned while locked");

    // That host dies: its session ends and the lock with it. The server ends the backend
    // after the client has gone, so wait until it has let go of the lock.
    other.close().await.unwrap();
    until_no_session_holds(&pool, RETENTION_LOCK_KEY).await;
    let run = store
        .prune_if_due(&policy(), Duration::ZERO, "host-a")
        .await
        .unwrap();
    assert!(
        matches!(run, MaintenanceRun::Ran(r) if r.jobs.deleted == 10),
        "{run:?}"
    );
    // The run released its lock: the next one may take it.
    let run = store
        .prune_if_due(&policy(), Duration::ZERO, "host-a")
        .await
        .unwrap();
    assert!(
        matches!(run, MaintenanceRun::Ran(r) if r.jobs.deleted == 0),
        "{run:?}"
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn two_hosts_at_once_prune_once(pool: PgPool) {
    let store = setup(&pool).await;
    old_completed(&store, &pool, 30).await;
    let (a, b) = (host_store(&pool).await, host_store(&pool).await);
    let policy = policy();
    let (ra, rb) = tokio::join!(
        a.prune_if_due(&policy, HOUR, "host-a"),
        b.prune_if_due(&policy, HOUR, "host-b"),
    );
    let runs = [ra.unwrap(), rb.unwrap()];
    let ran: Vec<_> = runs
        .iter()
        .filter_map(|r| match r {
            MaintenanceRun::Ran(report) => Some(report.jobs.deleted),
            _ => None,
        })
        .collect();
    assert_eq!(ran, vec![30], "exactly one host pruned: {runs:?}");
    assert_eq!(count_jobs(&pool).await, 0);
}
