//! Fairness between tenants through real workers, real components and real Postgres:
//! a late small tenant is not starved by an earlier flood, and a tenant's cap on running
//! jobs holds across two workers.

use std::time::Duration;

use crate::support::Fixture;
use chrono::{DateTime, Utc};
use sluice_sandbox::Sandbox;
use sluice_store::{NewJob, Store};
use sluice_worker::{self as worker, WorkerConfig};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

const FLOOD: &str = "flood";
const SMALL: &str = "small";

/// Tenants `flood` and `small`, each with job type `task` run by the sample of that name,
/// and a sandbox of 16.
async fn setup(pool: &PgPool, task: &str) -> (Store, Sandbox) {
    let fixture = Fixture::new(pool)
        .log("warn")
        .sandbox_of(16)
        .tenant(FLOOD)
        .tenant(SMALL)
        .job_type(task, task)
        .await;
    (fixture.store.clone(), fixture.sandbox().clone())
}

async fn enqueue(store: &Store, tenant: &str, task: &str, count: usize, payload: &str) {
    let jobs: Vec<NewJob> = (0..count)
        .map(|_| NewJob::new(tenant, task, payload.as_bytes().to_vec()))
        .collect();
    for chunk in jobs.chunks(1000) {
        store.enqueue_many(chunk).await.unwrap();
    }
}

fn drainer(name: &str, concurrency: usize) -> WorkerConfig {
    let mut config = WorkerConfig::new(name);
    config.concurrency = concurrency;
    config.drain = true;
    config.drain_horizon = Duration::from_millis(200);
    config.idle.safety_poll = Duration::from_millis(50);
    config.idle.backoff_first = Duration::from_millis(50);
    config
}

/// Tenant `flood` enqueues 5,000 jobs, then tenant `small` 50; with concurrency 8 every
/// one of `small`'s jobs finishes before `flood`'s 500th.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_small_tenant_finishes_before_the_floods_500th_job(pool: PgPool) {
    let _quiet = crate::support::quiet_machine().await;
    let (store, sandbox) = setup(&pool, "echo").await;
    enqueue(&store, FLOOD, "echo", 5000, "{}").await;
    enqueue(&store, SMALL, "echo", 50, "{}").await;

    let run = worker::run(
        store.clone(),
        sandbox,
        drainer("w", 8),
        CancellationToken::new(),
    );
    let summary = tokio::time::timeout(Duration::from_secs(240), run)
        .await
        .expect("the worker drains 5,050 echo jobs within four minutes")
        .unwrap();
    assert_eq!(summary.completed, 5050, "{summary:?}");

    let (small_done, small_last): (i64, DateTime<Utc>) = sqlx::query_as(
        "SELECT count(*), max(finished_at) FROM sluice.jobs \
         WHERE tenant = $1 AND state = 'completed'",
    )
    .bind(SMALL)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(small_done, 50);
    let flood_before: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM sluice.jobs WHERE tenant = $1 AND finished_at < $2",
    )
    .bind(FLOOD)
    .bind(small_last)
    .fetch_one(&pool)
    .await
    .unwrap();
    println!("flood jobs finished before small's last: {flood_before} of 5000");
    assert!(
        flood_before < 500,
        "{flood_before} of flood's jobs finished before small's 50th"
    );
}

/// `small` is capped at 2 running jobs; two workers of concurrency 4 drain 12 of its
/// jobs (and 12 of `flood`'s): the attempt history never shows 3 of `small`'s at once.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_running_cap_holds_across_two_workers(pool: PgPool) {
    let _quiet = crate::support::quiet_machine().await;
    let (store, sandbox) = setup(&pool, "sleep").await;
    store.set_tenant_max_running(SMALL, Some(2)).await.unwrap();
    enqueue(&store, SMALL, "sleep", 12, r#"{"ms":40}"#).await;
    enqueue(&store, FLOOD, "sleep", 12, r#"{"ms":40}"#).await;

    let workers = ["w1", "w2"].map(|name| {
        tokio::spawn(worker::run(
            store.clone(),
            sandbox.clone(),
            drainer(name, 4),
            CancellationToken::new(),
        ))
    });
    for w in workers {
        tokio::time::timeout(Duration::from_secs(120), w)
            .await
            .expect("workers drain within two minutes")
            .unwrap()
            .unwrap();
    }

    let spans: Vec<(DateTime<Utc>, DateTime<Utc>, String)> = sqlx::query_as(
        "SELECT a.started_at, a.finished_at, a.worker FROM sluice.job_attempts a \
         JOIN sluice.jobs j ON j.id = a.job_id WHERE j.tenant = $1",
    )
    .bind(SMALL)
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(spans.len(), 12, "one attempt per job");
    let workers: std::collections::HashSet<&str> =
        spans.iter().map(|(_, _, w)| w.as_str()).collect();
    // Sweep: +1 at each start, -1 at each finish; a finish at the same instant as a start
    // comes first (a claim's now() follows the completion it waited for).
    let mut events: Vec<(DateTime<Utc>, i32)> = spans
        .iter()
        .flat_map(|(start, end, _)| [(*start, 1), (*end, -1)])
        .collect();
    events.sort();
    let mut running = 0;
    let mut peak = 0;
    for (_, delta) in events {
        running += delta;
        peak = peak.max(running);
    }
    println!("small's peak concurrency {peak}, run by workers {workers:?}");
    assert!(peak <= 2, "small ran {peak} jobs at once");
    assert_eq!(peak, 2, "the cap is reached, not undershot");
}
