//! A light tenant's job beside a flood, through a real worker (issue #22): with the
//! flood's jobs filling every slot — and, with `--prefetch`, the worker's local queue —
//! the light job is claimed by the next claim after it is enqueued and starts at the next
//! free slot. An ordering assertion, not a timing one: it counts how many of the flood's
//! jobs finished between the light job's enqueue and its own end.

mod support;

use std::time::Duration;

use chrono::{DateTime, Utc};
use sluice::worker::{self, Prefetch, WorkerConfig};
use sluice_sandbox::Sandbox;
use sluice_store::{NewJob, Store};
use sqlx::PgPool;
use support::Fixture;
use tokio_util::sync::CancellationToken;

const FLOOD: &str = "flood";
const LIGHT: &str = "light";
const CONCURRENCY: usize = 2;

async fn setup(pool: &PgPool) -> (Store, Sandbox) {
    let fixture = Fixture::new(pool)
        .sandbox_of(4)
        .tenant(FLOOD)
        .tenant(LIGHT)
        .job_type("sleep", "sleep")
        .await;
    (fixture.store.clone(), fixture.sandbox().clone())
}

async fn running(pool: &PgPool, tenant: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM sluice.jobs WHERE tenant = $1 AND state = 'running'")
        .bind(tenant)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Flood jobs that finished after the light job was enqueued and before it finished.
async fn overtaken_by(pool: &PgPool, prefetch: usize) -> i64 {
    let (store, sandbox) = setup(pool).await;
    let flood: Vec<NewJob> = (0..300)
        .map(|_| NewJob::new(FLOOD, "sleep", br#"{"ms":50}"#.to_vec()))
        .collect();
    store.enqueue_many(&flood).await.unwrap();

    let mut config = WorkerConfig::new("w");
    config.concurrency = CONCURRENCY;
    config.prefetch = Prefetch::Fixed(prefetch);
    let stop = CancellationToken::new();
    let worker = tokio::spawn(worker::run(store.clone(), sandbox, config, stop.clone()));
    // Wait until the worker holds every slot and its whole prefetch queue.
    let full = (CONCURRENCY + prefetch) as i64;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while running(pool, FLOOD).await < full {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the flood never filled the worker"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;

    let light = store
        .enqueue(&NewJob::new(LIGHT, "sleep", br#"{"ms":1}"#.to_vec()))
        .await
        .unwrap()
        .id;
    let (created, finished): (DateTime<Utc>, DateTime<Utc>) = loop {
        let row: (DateTime<Utc>, Option<DateTime<Utc>>) =
            sqlx::query_as("SELECT created_at, finished_at FROM sluice.jobs WHERE id = $1")
                .bind(light)
                .fetch_one(pool)
                .await
                .unwrap();
        if let (created, Some(finished)) = row {
            break (created, finished);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the light job never finished"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    stop.cancel();
    worker.await.unwrap().unwrap();
    sqlx::query_scalar(
        "SELECT count(*) FROM sluice.jobs WHERE tenant = $1 AND finished_at > $2 \
         AND finished_at < $3",
    )
    .bind(FLOOD)
    .bind(created)
    .bind(finished)
    .fetch_one(pool)
    .await
    .unwrap()
}

/// Without prefetch: every slot busy with the flood; the light job takes the next slot
/// that frees. At most each busy slot's flood job (and the one that started as the light
/// job's claim was on its way) can finish first.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn without_prefetch_the_light_job_takes_the_next_free_slot(pool: PgPool) {
    let overtaken = overtaken_by(&pool, 0).await;
    println!("flood jobs finished while the light job waited: {overtaken}");
    assert!(
        overtaken <= 2 * CONCURRENCY as i64,
        "{overtaken} flood jobs went first"
    );
}

/// With a prefetch queue of 40 flood jobs: a FIFO queue would run all 40 first (the
/// light job would wait ~1 s); the notice claims it at once and the fair queue starts it
/// at the next free slot.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn with_prefetch_the_light_job_does_not_wait_behind_the_prefetched_flood(pool: PgPool) {
    let overtaken = overtaken_by(&pool, 40).await;
    println!("flood jobs finished while the light job waited: {overtaken}");
    assert!(
        overtaken <= 2 * CONCURRENCY as i64,
        "{overtaken} flood jobs went first"
    );
}
