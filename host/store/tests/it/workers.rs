//! The worker registry: registration, refusal of a live id, reuse after a stop or a
//! lapsed lease, heartbeats (with and without jobs), states, retention. Time is moved
//! with SQL, never slept.

use std::time::Duration;

use sluice_store::{
    NewWorker, Store, StoreError, WORKER_RETENTION, WorkerKind, WorkerRecord, WorkerState,
};
use sqlx::PgPool;

use crate::common::{claim_one, job, setup};

fn worker(id: &str) -> NewWorker {
    NewWorker {
        id: id.into(),
        kind: WorkerKind::Worker,
        hostname: "box-1".into(),
        pid: 4242,
        version: "9.9.9".into(),
        contracts: vec!["0.1".into(), "0.2".into()],
        concurrency: Some(4),
        lease: Duration::from_secs(30),
    }
}

async fn row(store: &Store, id: &str) -> WorkerRecord {
    store
        .list_workers()
        .await
        .unwrap()
        .into_iter()
        .find(|w| w.id == id)
        .unwrap_or_else(|| panic!("no registry row for {id}"))
}

/// Moves a row's last heartbeat `secs` seconds into the past.
async fn age(pool: &PgPool, id: &str, secs: i64) {
    sqlx::query(
        "UPDATE sluice.workers SET last_heartbeat = last_heartbeat - $2 * interval '1 second' WHERE id = $1",
    )
    .bind(id)
    .bind(secs)
    .execute(pool)
    .await
    .unwrap();
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_registered_worker_is_listed_running_with_what_it_runs(pool: PgPool) {
    let store = Store::new(pool);
    let registration = store.register_worker(&worker("w-1")).await.unwrap();
    assert_eq!(registration.id, "w-1");
    let w = row(&store, "w-1").await;
    assert_eq!(w.state, WorkerState::Running);
    assert_eq!(w.kind, WorkerKind::Worker);
    assert_eq!((w.hostname.as_str(), w.pid), ("box-1", 4242));
    assert_eq!(w.version, "9.9.9");
    assert_eq!(w.contracts, ["0.1", "0.2"]);
    assert_eq!(w.concurrency, Some(4));
    assert_eq!(w.lease_ms, 30_000);
    assert_eq!(w.stopped_at, None);
    assert_eq!(w.started_at, w.last_heartbeat);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_live_id_is_refused_naming_it_and_when_it_was_last_seen(pool: PgPool) {
    let store = Store::new(pool.clone());
    let first = store.register_worker(&worker("w-1")).await.unwrap();
    age(&pool, "w-1", 5).await;
    let mut second = worker("w-1");
    second.pid = 7;
    second.hostname = "box-2".into();
    let error = store.register_worker(&second).await.unwrap_err();
    let StoreError::WorkerIdInUse { id, live } = &error else {
        panic!("expected WorkerIdInUse, got {error:?}");
    };
    assert_eq!(id, "w-1");
    let live = live.as_ref().expect("the live row is described");
    assert_eq!((live.hostname.as_str(), live.pid), ("box-1", 4242));
    assert!(
        (4.0..60.0).contains(&live.seconds_ago),
        "{}",
        live.seconds_ago
    );
    let message = error.to_string();
    for part in ["\"w-1\"", "box-1", "pid 4242", "last seen 5", "--worker-id"] {
        assert!(message.contains(part), "{part:?} missing from: {message}");
    }
    // The live row is untouched: still the first process's.
    let w = row(&store, "w-1").await;
    assert_eq!((w.hostname.as_str(), w.pid), ("box-1", 4242));
    assert!(store.worker_heartbeat(&first).await.unwrap());
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_stopped_id_is_free_at_once(pool: PgPool) {
    let store = Store::new(pool);
    let first = store.register_worker(&worker("w-1")).await.unwrap();
    assert!(store.stop_worker(&first).await.unwrap());
    let w = row(&store, "w-1").await;
    assert_eq!(w.state, WorkerState::Stopped);
    assert!(w.stopped_at.is_some());
    assert!(!store.stop_worker(&first).await.unwrap(), "stopped once");

    let mut again = worker("w-1");
    again.pid = 99;
    let second = store.register_worker(&again).await.unwrap();
    assert_ne!(first.session, second.session);
    let w = row(&store, "w-1").await;
    assert_eq!(
        (w.state, w.pid, w.stopped_at),
        (WorkerState::Running, 99, None)
    );
    // The first start can neither stop nor renew the new registration.
    assert!(!store.stop_worker(&first).await.unwrap());
    assert!(!store.worker_heartbeat(&first).await.unwrap());
    assert_eq!(row(&store, "w-1").await.state, WorkerState::Running);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_lost_worker_is_listed_lost_and_its_id_reusable(pool: PgPool) {
    let store = Store::new(pool.clone());
    store.register_worker(&worker("w-1")).await.unwrap();
    // Just inside the 30 s lease: still live.
    age(&pool, "w-1", 29).await;
    assert_eq!(row(&store, "w-1").await.state, WorkerState::Running);
    assert!(matches!(
        store.register_worker(&worker("w-1")).await,
        Err(StoreError::WorkerIdInUse { .. })
    ));
    age(&pool, "w-1", 2).await;
    assert_eq!(row(&store, "w-1").await.state, WorkerState::Lost);
    store.register_worker(&worker("w-1")).await.unwrap();
    assert_eq!(row(&store, "w-1").await.state, WorkerState::Running);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn the_job_heartbeat_renews_the_workers_row_with_or_without_jobs(pool: PgPool) {
    let store = setup(&pool).await;
    store.register_worker(&worker("w-1")).await.unwrap();
    age(&pool, "w-1", 20).await;
    let before = row(&store, "w-1").await.last_heartbeat;
    // Idle: no leases, one statement all the same.
    let report = store
        .heartbeat("w-1", &[], Duration::from_secs(30))
        .await
        .unwrap();
    assert!(report.lost.is_empty() && report.cancel_requested.is_empty());
    let idle = row(&store, "w-1").await.last_heartbeat;
    assert!(idle > before, "{idle} > {before}");

    store.enqueue(&job("x")).await.unwrap();
    let claimed = claim_one(&store, "w-1").await;
    age(&pool, "w-1", 20).await;
    let report = store
        .heartbeat("w-1", &[claimed.lease], Duration::from_secs(30))
        .await
        .unwrap();
    assert!(report.lost.is_empty());
    let busy = row(&store, "w-1").await;
    assert!(busy.last_heartbeat >= idle);
    assert_eq!(busy.state, WorkerState::Running);
    // An unregistered worker's heartbeat touches no row.
    store
        .heartbeat("nobody", &[], Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(store.list_workers().await.unwrap().len(), 1);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_scheduler_registers_without_contracts_and_heartbeats_its_row(pool: PgPool) {
    let store = Store::new(pool.clone());
    let mut scheduler = worker("sched-1");
    scheduler.kind = WorkerKind::Scheduler;
    scheduler.contracts = Vec::new();
    scheduler.concurrency = None;
    let registration = store.register_worker(&scheduler).await.unwrap();
    age(&pool, "sched-1", 60).await;
    assert_eq!(row(&store, "sched-1").await.state, WorkerState::Lost);
    assert!(store.worker_heartbeat(&registration).await.unwrap());
    let w = row(&store, "sched-1").await;
    assert_eq!(
        (w.kind, w.state, w.concurrency),
        (WorkerKind::Scheduler, WorkerState::Running, None)
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn the_list_shows_running_then_lost_then_stopped(pool: PgPool) {
    let store = Store::new(pool.clone());
    let stopped = store.register_worker(&worker("a-stopped")).await.unwrap();
    store.stop_worker(&stopped).await.unwrap();
    store.register_worker(&worker("b-lost")).await.unwrap();
    age(&pool, "b-lost", 31).await;
    store.register_worker(&worker("c-running")).await.unwrap();
    let listed: Vec<(String, WorkerState)> = store
        .list_workers()
        .await
        .unwrap()
        .into_iter()
        .map(|w| (w.id, w.state))
        .collect();
    assert_eq!(
        listed,
        [
            ("c-running".into(), WorkerState::Running),
            ("b-lost".into(), WorkerState::Lost),
            ("a-stopped".into(), WorkerState::Stopped),
        ]
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn retention_prunes_rows_stopped_or_lost_long_ago_only(pool: PgPool) {
    let store = Store::new(pool.clone());
    let old_stop = store.register_worker(&worker("old-stopped")).await.unwrap();
    store.stop_worker(&old_stop).await.unwrap();
    let recent = store
        .register_worker(&worker("recent-stopped"))
        .await
        .unwrap();
    store.stop_worker(&recent).await.unwrap();
    store.register_worker(&worker("old-lost")).await.unwrap();
    store.register_worker(&worker("running")).await.unwrap();
    let days = WORKER_RETENTION.as_secs() as i64 + 3600;
    sqlx::query(
        "UPDATE sluice.workers SET stopped_at = stopped_at - $1 * interval '1 second' WHERE id = 'old-stopped'",
    )
    .bind(days)
    .execute(&pool)
    .await
    .unwrap();
    age(&pool, "old-lost", days).await;
    assert_eq!(store.prune_workers(WORKER_RETENTION).await.unwrap(), 2);
    let left: Vec<String> = store
        .list_workers()
        .await
        .unwrap()
        .into_iter()
        .map(|w| w.id)
        .collect();
    assert_eq!(left, ["running", "recent-stopped"]);
}
