//! Flow control through real workers, real components and real Postgres
//! (docs/flow-control.md): a cap per concurrency key across two workers, a type's rate
//! limit across two workers, and pausing a type with work pending and running. Every
//! assertion reads the attempt history (when attempts started and ended), not the wall
//! clock of the test.

use std::time::Duration;

use crate::support::Fixture;
use crate::support::fixture::DEFAULT_TENANT as TENANT;
use chrono::{DateTime, Utc};
use sluice_sandbox::Sandbox;
use sluice_store::{FlowChange, JobState, NewJob, Rate, Store};
use sluice_worker::{self as worker, Prefetch, WorkerConfig};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

async fn setup(pool: &PgPool, task: &str) -> (Store, Sandbox) {
    let fixture = Fixture::new(pool)
        .log("warn")
        .sandbox_of(16)
        .job_type(task, task)
        .await;
    (fixture.store.clone(), fixture.sandbox().clone())
}

fn drainer(name: &str, concurrency: usize) -> WorkerConfig {
    let mut config = WorkerConfig::new(name);
    config.concurrency = concurrency;
    config.drain = true;
    config.drain_horizon = Duration::from_millis(300);
    config.idle.safety_poll = Duration::from_millis(50);
    config.idle.backoff_first = Duration::from_millis(50);
    config
}

/// Runs two draining workers of concurrency 4 to the end.
async fn drain_with_two(store: &Store, sandbox: &Sandbox) {
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
}

/// Every attempt of the type: (concurrency key, started, finished).
async fn attempts(pool: &PgPool, job_type: &str) -> Vec<(String, DateTime<Utc>, DateTime<Utc>)> {
    sqlx::query_as(
        "SELECT coalesce(j.flow_key, ''), a.started_at, a.finished_at FROM sluice.job_attempts a \
         JOIN sluice.jobs j ON j.id = a.job_id WHERE j.job_type = $1 ORDER BY a.started_at",
    )
    .bind(job_type)
    .fetch_all(pool)
    .await
    .unwrap()
}

/// `sleep` with at most one running job per key; 2 keys × 6 jobs of 300 ms over two
/// workers of concurrency 4: no two attempts of one key overlap, and the two keys run
/// side by side.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn one_job_per_key_at_a_time_across_two_workers_both_keys_progressing(pool: PgPool) {
    let (store, sandbox) = setup(&pool, "sleep").await;
    let change = FlowChange {
        max_running_per_key: Some(Some(1)),
        ..Default::default()
    };
    store.set_flow(TENANT, "sleep", &change).await.unwrap();
    let jobs: Vec<NewJob> = (0..12)
        .map(|i| {
            NewJob::new(TENANT, "sleep", br#"{"ms":300}"#.to_vec())
                .with_concurrency_key(if i % 2 == 0 { "a" } else { "b" })
        })
        .collect();
    store.enqueue_many(&jobs).await.unwrap();
    drain_with_two(&store, &sandbox).await;

    let spans = attempts(&pool, "sleep").await;
    assert_eq!(spans.len(), 12, "one attempt per job: {spans:?}");
    for key in ["a", "b"] {
        let mine: Vec<_> = spans.iter().filter(|s| s.0 == key).collect();
        assert_eq!(mine.len(), 6);
        for pair in mine.windows(2) {
            assert!(
                pair[1].1 >= pair[0].2,
                "key {key}: an attempt started at {} before the previous ended at {}",
                pair[1].1,
                pair[0].2
            );
        }
    }
    // Both keys progress in parallel: some attempt of `a` overlaps one of `b`.
    let overlapping = spans.iter().filter(|x| x.0 == "a").any(|a| {
        spans
            .iter()
            .filter(|y| y.0 == "b")
            .any(|b| a.1 < b.2 && b.1 < a.2)
    });
    assert!(overlapping, "the keys ran one after the other: {spans:?}");
    let first = spans.first().unwrap().1;
    let last = spans.iter().map(|s| s.2).max().unwrap();
    println!(
        "12 jobs of 300 ms over 2 keys took {} ms",
        (last - first).num_milliseconds()
    );
}

/// `echo` limited to 5 a second (burst 5): 15 jobs over two workers start over at least
/// 2 s, and all complete with one attempt each.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_rate_of_five_a_second_spreads_fifteen_jobs_over_two_seconds(pool: PgPool) {
    let (store, sandbox) = setup(&pool, "echo").await;
    let change = FlowChange {
        rate: Some(Some(Rate::parse("5/1s").unwrap())),
        ..Default::default()
    };
    store.set_flow(TENANT, "echo", &change).await.unwrap();
    let jobs: Vec<NewJob> = (0..15)
        .map(|i| NewJob::new(TENANT, "echo", format!("{{\"n\":{i}}}").into_bytes()))
        .collect();
    store.enqueue_many(&jobs).await.unwrap();
    drain_with_two(&store, &sandbox).await;

    let spans = attempts(&pool, "echo").await;
    assert_eq!(
        spans.len(),
        15,
        "one attempt per job, none spent on waiting"
    );
    let (completed,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM sluice.jobs WHERE job_type = 'echo' AND state = 'completed'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(completed, 15);
    let starts: Vec<DateTime<Utc>> = spans.iter().map(|s| s.1).collect();
    let spread = *starts.last().unwrap() - starts[0];
    println!(
        "15 jobs at 5/1s started over {} ms",
        spread.num_milliseconds()
    );
    assert!(
        spread >= chrono::Duration::milliseconds(1950),
        "started over {spread}"
    );
    // In any one second, at most 5 + 5 start (the burst plus a second's refill).
    for (i, s) in starts.iter().enumerate() {
        let within = starts[i..]
            .iter()
            .take_while(|t| **t - *s < chrono::Duration::seconds(1))
            .count();
        assert!(within <= 10, "{within} started within a second of {s}");
    }
}

/// A type paused with 100 jobs pending and one running: the running one finishes, a
/// draining worker claims none of the 100; after resume all complete.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_paused_type_keeps_its_jobs_pending_until_resumed(pool: PgPool) {
    let (store, sandbox) = setup(&pool, "sleep").await;
    let jobs: Vec<NewJob> = (0..100)
        .map(|_| NewJob::new(TENANT, "sleep", br#"{"ms":1}"#.to_vec()))
        .collect();
    store.enqueue_many(&jobs).await.unwrap();
    let long = store
        .enqueue(
            &NewJob::new(TENANT, "sleep", br#"{"ms":1500}"#.to_vec())
                .with_priority(sluice_store::priority::CRITICAL),
        )
        .await
        .unwrap()
        .id;
    let mut config = drainer("w1", 1);
    config.prefetch = Prefetch::Fixed(0);
    config.spare_slots = 0;
    let run = tokio::spawn(worker::run(
        store.clone(),
        sandbox.clone(),
        config,
        CancellationToken::new(),
    ));
    // Wait for the long job to start, then pause.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let job = store.get(None, long).await.unwrap().unwrap();
        if job.state == JobState::Running {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pause = FlowChange {
        paused: Some(true),
        ..Default::default()
    };
    store.set_flow(TENANT, "sleep", &pause).await.unwrap();
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the worker drains")
        .unwrap()
        .unwrap();
    let long_job = store.get(None, long).await.unwrap().unwrap();
    assert_eq!(
        long_job.state,
        JobState::Completed,
        "the running job finished"
    );
    let (pending, attempted): (i64, i64) = sqlx::query_as(
        "SELECT count(*), count(*) FILTER (WHERE attempt > 0) FROM sluice.jobs \
         WHERE state = 'pending'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!((pending, attempted), (100, 0), "none claimed while paused");
    let some_pending =
        sqlx::query_scalar::<_, i64>("SELECT id FROM sluice.jobs WHERE state = 'pending' LIMIT 1")
            .fetch_one(&pool)
            .await
            .unwrap();
    let shown = store.get(None, some_pending).await.unwrap().unwrap();
    assert_eq!(
        shown.held.map(|h| h.to_string()).as_deref(),
        Some("type paused")
    );

    let resume = FlowChange {
        paused: Some(false),
        ..Default::default()
    };
    store.set_flow(TENANT, "sleep", &resume).await.unwrap();
    drain_with_two(&store, &sandbox).await;
    let (completed,): (i64,) =
        sqlx::query_as("SELECT count(*) FROM sluice.jobs WHERE state = 'completed'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(completed, 101);
}
