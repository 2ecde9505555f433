//! A light tenant's job beside a flood, through a real worker (issue #22): with the
//! flood's jobs filling every slot — and, with `--prefetch`, the worker's local queue —
//! the light job is claimed by the next claim after it is enqueued and starts at the next
//! free slot; with a spare slot (the default) it starts before any of the flood's jobs
//! ends, and the spare slot never runs a second job of a tenant executing there.
//! Ordering assertions, not timing ones: they count how many of the flood's jobs
//! finished between the light job's enqueue and its own end, and how many of one
//! tenant's attempts overlapped.

use std::time::Duration;

use crate::support::Fixture;
use chrono::{DateTime, Utc};
use sluice_sandbox::Sandbox;
use sluice_store::{NewJob, Store};
use sluice_worker::{self as worker, Prefetch, WorkerConfig};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

const FLOOD: &str = "flood";
const LIGHT: &str = "light";
const CONCURRENCY: usize = 2;
/// Milliseconds of each flood job in the tests without a spare slot (see `overtaken_by`).
const FLOOD_MS: u32 = 250;

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

/// Flood jobs (of `flood_ms` each) that finished after the light job was enqueued and
/// before it finished.
///
/// The ordering tests without a spare slot run flood jobs of [`FLOOD_MS`]: long enough
/// that a claim slowed by a loaded machine (the notice's claim, the hand-over to a
/// slot) costs less than one flood job, so the count measures the order, not the load.
/// A FIFO queue would still let all 40 prefetched jobs go first.
async fn overtaken_by(pool: &PgPool, prefetch: usize, spare_slots: usize, flood_ms: u32) -> i64 {
    let (store, sandbox) = setup(pool).await;
    let payload = format!(r#"{{"ms":{flood_ms}}}"#);
    let flood: Vec<NewJob> = (0..300)
        .map(|_| NewJob::new(FLOOD, "sleep", payload.clone().into_bytes()))
        .collect();
    store.enqueue_many(&flood).await.unwrap();

    let mut config = WorkerConfig::new("w");
    config.concurrency = CONCURRENCY;
    config.prefetch = Prefetch::Fixed(prefetch);
    config.spare_slots = spare_slots;
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

/// Without prefetch or spare slot: every slot busy with the flood; the light job takes
/// the next slot that frees. At most each busy slot's flood job (and the one that
/// started as the light job's claim was on its way) can finish first.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn without_prefetch_the_light_job_takes_the_next_free_slot(pool: PgPool) {
    let _quiet = crate::support::quiet_machine().await;
    let overtaken = overtaken_by(&pool, 0, 0, FLOOD_MS).await;
    println!("flood jobs finished while the light job waited: {overtaken}");
    assert!(
        overtaken <= 2 * CONCURRENCY as i64,
        "{overtaken} flood jobs went first"
    );
}

/// With a prefetch queue of 40 flood jobs (and no spare slot): a FIFO queue would run
/// all 40 first (the light job would wait ~5 s); the notice claims it at once and the
/// fair queue starts it at the next free slot.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn with_prefetch_the_light_job_does_not_wait_behind_the_prefetched_flood(pool: PgPool) {
    let _quiet = crate::support::quiet_machine().await;
    let overtaken = overtaken_by(&pool, 40, 0, FLOOD_MS).await;
    println!("flood jobs finished while the light job waited: {overtaken}");
    assert!(
        overtaken <= 2 * CONCURRENCY as i64,
        "{overtaken} flood jobs went first"
    );
}

/// With the default spare slot, the light job does not wait for a slot at all: the
/// flood's jobs take 2 s each, and none of them ends before the light job does, with or
/// without a prefetch queue. With `spare_slots = 0` the light job waits for one of them.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_spare_slot_starts_the_light_job_before_any_flood_job_ends(pool: PgPool) {
    let _quiet = crate::support::quiet_machine().await;
    let overtaken = overtaken_by(&pool, 0, 1, 2000).await;
    assert_eq!(
        overtaken, 0,
        "without prefetch, {overtaken} flood jobs went first"
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_spare_slot_starts_the_light_job_past_a_prefetched_flood(pool: PgPool) {
    let _quiet = crate::support::quiet_machine().await;
    let overtaken = overtaken_by(&pool, 40, 1, 2000).await;
    assert_eq!(
        overtaken, 0,
        "with prefetch, {overtaken} flood jobs went first"
    );
}

/// One tenant alone, its jobs enqueued one at a time while every slot is busy (each
/// enqueue notifies the worker, which then claims for its spare slot): the spare slot
/// never takes that tenant's jobs, so no more than `CONCURRENCY` of its guests ever run
/// at once (swept over the times each `sleep` guest reports it began and ended).
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn the_spare_slot_never_runs_a_tenant_already_executing_there(pool: PgPool) {
    let _quiet = crate::support::quiet_machine().await;
    let (store, sandbox) = setup(&pool).await;
    let sleep = |ms: u32| NewJob::new(FLOOD, "sleep", format!(r#"{{"ms":{ms}}}"#).into_bytes());
    store.enqueue_many(&[sleep(150), sleep(150)]).await.unwrap();
    let mut config = WorkerConfig::new("w");
    config.concurrency = CONCURRENCY;
    config.prefetch = Prefetch::Fixed(0);
    config.drain = true;
    config.drain_horizon = Duration::from_millis(300);
    let worker = tokio::spawn(worker::run(
        store.clone(),
        sandbox,
        config,
        CancellationToken::new(),
    ));
    for _ in 0..12 {
        tokio::time::sleep(Duration::from_millis(25)).await;
        store.enqueue(&sleep(40)).await.unwrap();
    }
    let summary = tokio::time::timeout(Duration::from_secs(60), worker)
        .await
        .expect("the worker drains 14 jobs within a minute")
        .unwrap()
        .unwrap();
    assert_eq!(summary.completed, 14, "{summary:?}");
    let outputs: Vec<Vec<u8>> =
        sqlx::query_scalar("SELECT output FROM sluice.jobs WHERE tenant = $1")
            .bind(FLOOD)
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(outputs.len(), 14);
    // `slept N ms from B to E`: +1 at each B, -1 at each E (an end at the same instant
    // as a start goes first).
    let mut events: Vec<(u128, i32)> = outputs
        .iter()
        .flat_map(|output| {
            let text = String::from_utf8_lossy(output);
            let words: Vec<&str> = text.split(' ').collect();
            let [_, _, _, "from", began, "to", ended] = words[..] else {
                panic!("unexpected output {text:?}");
            };
            [(began.parse().unwrap(), 1), (ended.parse().unwrap(), -1)]
        })
        .collect();
    events.sort();
    let peak = events
        .iter()
        .scan(0, |running, (_, step)| {
            *running += step;
            Some(*running)
        })
        .max()
        .unwrap_or(0);
    println!("at most {peak} of the tenant's guests ran at once");
    assert!(
        peak <= CONCURRENCY as i32,
        "{peak} of one tenant's guests ran at once"
    );
    assert_eq!(
        peak, CONCURRENCY as i32,
        "the slots were never full: the test tests nothing"
    );
}
