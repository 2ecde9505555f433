//! A primary failover under a draining fleet, with a real HA manager (pg_auto_failover,
//! `formation`): two `sluice worker` processes on the multi-host URL
//! (`postgres://h1:p1,h2:p2/db?target_session_attrs=read-write`) drain 2,000 × 50 ms
//! jobs; `pg_autoctl perform failover` runs mid-drain. Every job completes exactly once,
//! the outage spends no attempt, both workers LISTEN on the new primary again (how soon
//! is printed), and a lease from before the failover cannot complete a job afterwards.

use std::time::{Duration, Instant};

use sluice_store::{ClaimRequest, Completion, NewJob, Store, StoreError};
use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;

use super::formation::Formation;
use super::tool;
use crate::support::Sluice;
use crate::support::worker_process::WorkerProcess;

const JOBS: i64 = 2_000;
const WORKERS: [&str; 2] = ["fo-w1", "fo-w2"];

/// A one-connection pool on whichever node takes writes now.
async fn primary(formation: &Formation) -> PgPool {
    for _ in 0..300 {
        for i in 0..2 {
            let Ok(pool) = PgPoolOptions::new()
                .max_connections(1)
                .acquire_timeout(Duration::from_secs(2))
                .connect(&formation.node_url(i))
                .await
            else {
                continue;
            };
            let standby: Result<bool, _> = sqlx::query_scalar("SELECT pg_is_in_recovery()")
                .fetch_one(&pool)
                .await;
            if standby.is_ok_and(|s| !s) {
                return pool;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no node takes writes: {:?}", formation.states());
}

async fn count(pool: &PgPool, sql: &str) -> i64 {
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
        .fetch_one(pool)
        .await
        .unwrap_or(-1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_mid_drain_loses_no_job_spends_no_attempt_and_keeps_fencing() {
    let _quiet = crate::support::quiet_machine().await;
    let Some(autoctl) = tool("pg_autoctl", "postgresql-15-auto-failover") else {
        return;
    };
    let setup = Instant::now();
    let formation = tokio::task::spawn_blocking(move || Formation::start(&autoctl))
        .await
        .unwrap();
    let formation_took = setup.elapsed();
    let before = primary(&formation).await;
    let sync: String = sqlx::query_scalar("SELECT current_setting('synchronous_standby_names')")
        .fetch_one(&before)
        .await
        .unwrap();
    assert!(
        !sync.is_empty(),
        "pg_auto_failover replicates synchronously"
    );

    let sluice = Sluice {
        url: formation.url(),
        cache: std::env::temp_dir().join(format!("sluice-failover-cache-{}", formation.ports[0])),
    };
    sluice.ok(&["migrate"]);
    sluice.define("sleep", "sleep", &[]);
    sluice.ok(&["types", "set", "fence", "--component", "sleep"]);
    let store = Store::connect(&formation.url())
        .await
        .expect("multi-host URL");

    // The fencing probe: a job claimed under a short lease by a "worker" that then
    // stalls; the fleet's reaper takes it back and runs it.
    store
        .enqueue(&NewJob::new("default", "fence", br#"{"ms":1}"#.to_vec()))
        .await
        .unwrap();
    let stale = store
        .claim(&ClaimRequest {
            worker: "stale".into(),
            limit: 1,
            lease: Duration::from_secs(1),
            tenants: None,
            job_types: Some(vec!["fence".into()]),
            max_contract: u8::MAX,
            secret_keys: Vec::new(),
            skip_tenants: None,
        })
        .await
        .unwrap()
        .pop()
        .expect("the fence job");
    for chunk in 0..JOBS / 500 {
        let rows: Vec<NewJob> = (0..500)
            .map(|i| {
                NewJob::new("default", "sleep", br#"{"ms":50}"#.to_vec()).with_idempotency_key(
                    format!("fo-{chunk}-{i}"),
                    sluice_store::KeyScope::Retained,
                )
            })
            .collect();
        store.enqueue_many(&rows).await.unwrap();
    }

    let drain = Instant::now();
    let args = [
        "--concurrency",
        "4",
        // Longer than a failover takes on a loaded machine (leases are heartbeated again
        // once the workers reconnect): the outage must spend no attempt.
        "--lease",
        "90s",
        "--reap-interval",
        "1s",
        "--poll-interval",
        "5s",
    ];
    let mut workers: Vec<WorkerProcess> = WORKERS
        .iter()
        .map(|id| WorkerProcess::spawn(&sluice, id, &args))
        .collect();
    let completed = "SELECT count(*) FROM sluice.jobs WHERE state = 'completed'";
    while count(&before, completed).await < 300 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let done_before = count(&before, completed).await;
    drop(before);

    let failover_start = Instant::now();
    let failover = {
        let f = &formation;
        tokio::task::block_in_place(|| f.failover())
    };
    let after = primary(&formation).await;
    let listening = "SELECT count(DISTINCT application_name) FROM pg_stat_activity \
                     WHERE application_name LIKE 'sluice worker fo-w%' AND query LIKE 'LISTEN%'";
    while count(&after, listening).await < WORKERS.len() as i64 {
        assert!(
            failover_start.elapsed() < Duration::from_secs(120),
            "workers never LISTEN again"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let listen_back = failover_start.elapsed();

    super::wait_all_completed(&after, JOBS + 1, Duration::from_secs(300)).await;
    let drained = drain.elapsed();

    // Fencing across the failover: the stale lease completes nothing.
    let late = store.complete(&stale.lease, &Completion::default()).await;
    assert!(
        matches!(late, Err(StoreError::LeaseLost { .. })),
        "{late:?}"
    );

    for w in &workers {
        w.signal("TERM");
    }
    for w in &mut workers {
        let status = w
            .wait_timeout(Duration::from_secs(30))
            .expect("worker exits");
        assert!(status.success(), "{}: {status}\n{}", w.id, w.log());
    }

    // The verdict, on the new primary.
    let twice = count(
        &after,
        "SELECT count(*) FROM (SELECT job_id FROM sluice.job_attempts \
         WHERE outcome = 'completed' GROUP BY job_id HAVING count(*) > 1) t",
    )
    .await;
    assert_eq!(twice, 0, "no job completed twice");
    let spent = count(
        &after,
        "SELECT count(*) FROM sluice.jobs WHERE job_type = 'sleep' AND attempt <> 1",
    )
    .await;
    let other: Vec<(String, Option<String>, i64)> = sqlx::query_as(
        "SELECT worker, outcome::text, count(*) FROM sluice.job_attempts \
         WHERE outcome IS DISTINCT FROM 'completed' GROUP BY 1, 2 ORDER BY 1, 2",
    )
    .fetch_all(&after)
    .await
    .unwrap();
    assert_eq!(
        spent, 0,
        "the outage spent no attempt; other outcomes: {other:?}"
    );
    let fence_attempts = count(
        &after,
        "SELECT attempt::bigint FROM sluice.jobs WHERE job_type = 'fence'",
    )
    .await;
    let retried: usize = workers
        .iter()
        .map(|w| w.log().matches("retrying").count())
        .sum();
    eprintln!(
        "postgres::failover: formation up in {formation_took:.1?} (synchronous_standby_names = \
         {sync}); {done_before} of {JOBS} jobs done when `pg_autoctl perform failover` started; \
         it took {failover:.1?}; both workers LISTEN on the new primary {listen_back:.1?} after \
         it started ({:.1?} after it returned); {JOBS} jobs drained in {drained:.1?}, each completed once on its first \
         attempt; {retried} store calls retried by the workers; the fence job took \
         {fence_attempts} attempts and its stale lease completed nothing; other attempt \
         outcomes: {other:?}",
        listen_back.saturating_sub(failover)
    );
}
