//! `--prefetch auto`, the worker's default (issue #21), through real workers:
//! - under a backlog of short jobs the worker queues jobs ahead of its free slots (it
//!   holds more than its concurrency at some point), sizing the queue itself;
//! - with long jobs among short ones and two workers, the queue one worker sized while
//!   jobs were short does not make long jobs wait behind its busy slots while the other
//!   worker could run them: each worker ends up running half of the long jobs, and what
//!   a stalled queue held is given back (a `released` attempt in the history).
//!
//! Ordering and placement assertions, not timings.

use std::time::Duration;

use crate::support::Fixture;
use sluice_sandbox::Sandbox;
use sluice_shared::metrics::Metrics;
use sluice_store::{JobTypeSpec, NewJob, Store};
use sluice_worker::{self as worker, WorkerConfig};
use sqlx::PgPool;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const TENANT: &str = "acme";
const CONCURRENCY: usize = 4;
/// As many long jobs as the two workers have slots.
const LONG: usize = 2 * CONCURRENCY;
const LONG_MS: u64 = 1_500;

async fn setup(pool: &PgPool) -> (Store, Sandbox) {
    let fixture = Fixture::new(pool)
        .sandbox_of(2 * CONCURRENCY as u32)
        .tenant(TENANT)
        .job_type("echo", "echo")
        .job_type_with("sleep", "sleep", |spec| JobTypeSpec {
            fuel: Some(1 << 50),
            ..spec
        })
        .await;
    (fixture.store.clone(), fixture.sandbox().clone())
}

fn start(store: &Store, sandbox: &Sandbox, id: &str) -> Worker {
    let mut config = WorkerConfig::new(id);
    config.concurrency = CONCURRENCY;
    let metrics = config.metrics.clone();
    let stop = CancellationToken::new();
    let handle = tokio::spawn(worker::run(
        store.clone(),
        sandbox.clone(),
        config,
        stop.clone(),
    ));
    Worker {
        stop,
        handle,
        metrics,
    }
}

struct Worker {
    stop: CancellationToken,
    metrics: Metrics,
    handle: JoinHandle<anyhow::Result<worker::WorkerSummary>>,
}

impl Worker {
    /// The value of one of the worker's own metrics (no labels).
    fn metric(&self, name: &str) -> i64 {
        let text = self.metrics.encode();
        let value = text
            .lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no {name} in:\n{text}"));
        value.trim().parse().expect("an integer metric")
    }

    async fn stop(self) -> worker::WorkerSummary {
        self.stop.cancel();
        self.handle.await.unwrap().unwrap()
    }
}

async fn count(pool: &PgPool, sql: &'static str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(pool).await.unwrap()
}

async fn echo_jobs(store: &Store, n: usize) {
    let jobs: Vec<NewJob> = (0..n)
        .map(|i| NewJob::new(TENANT, "echo", format!("{{\"i\":{i}}}").into_bytes()))
        .collect();
    store.enqueue_many(&jobs).await.unwrap();
}

async fn wait_until(pool: &PgPool, sql: &'static str, at_least: i64, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while count(pool, sql).await < at_least {
        assert!(Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_backlog_of_short_jobs_grows_a_queue_ahead_of_the_slots(pool: PgPool) {
    let _quiet = crate::support::quiet_machine().await;
    let (store, sandbox) = setup(&pool).await;
    echo_jobs(&store, 3_000).await;
    let worker = start(&store, &sandbox, "w");
    let (mut deepest, mut most_held) = (0, 0);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        deepest = deepest.max(worker.metric("sluice_worker_prefetch_depth"));
        let held = count(
            &pool,
            "SELECT count(*) FROM sluice.jobs WHERE state = 'running' AND locked_by = 'w'",
        )
        .await;
        most_held = most_held.max(held);
        let left = count(
            &pool,
            "SELECT count(*) FROM sluice.jobs WHERE state <> 'completed'",
        )
        .await;
        if left == 0 || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let summary = worker.stop().await;
    println!(
        "deepest queue aimed for: {deepest}; most jobs held at once: {most_held} (concurrency {CONCURRENCY})"
    );
    assert_eq!(summary.completed, 3_000, "every job ran once: {summary:?}");
    assert!(
        deepest > 0,
        "the worker never sized a queue ahead of its slots"
    );
    assert!(
        most_held > CONCURRENCY as i64,
        "the worker never held more jobs than its {CONCURRENCY} slots (at most {most_held})"
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn long_jobs_among_short_ones_are_not_hoarded_by_one_worker(pool: PgPool) {
    let _quiet = crate::support::quiet_machine().await;
    let (store, sandbox) = setup(&pool).await;
    // Short jobs, the long ones in a block, short jobs again: worker `a` starts alone, so
    // its queue is sized on short jobs when it reaches the long block.
    echo_jobs(&store, 600).await;
    let long: Vec<NewJob> = (0..LONG)
        .map(|_| {
            NewJob::new(
                TENANT,
                "sleep",
                format!("{{\"ms\":{LONG_MS}}}").into_bytes(),
            )
        })
        .collect();
    store.enqueue_many(&long).await.unwrap();
    echo_jobs(&store, 600).await;

    let a = start(&store, &sandbox, "a");
    wait_until(
        &pool,
        "SELECT count(*) FROM sluice.jobs WHERE job_type = 'echo' AND state = 'completed'",
        200,
        "worker a ran 200 short jobs",
    )
    .await;
    let b = start(&store, &sandbox, "b");
    let held_by_a = "SELECT count(*) FROM sluice.jobs WHERE job_type = 'sleep' \
                     AND state = 'running' AND locked_by = 'a'";
    let mut a_held_long = 0;
    let done = "SELECT count(*) FROM sluice.jobs WHERE state = 'completed'";
    let deadline = Instant::now() + Duration::from_secs(90);
    while count(&pool, done).await < (1_200 + LONG) as i64 {
        a_held_long = a_held_long.max(count(&pool, held_by_a).await);
        assert!(Instant::now() < deadline, "the jobs never all completed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let gave_back = a.metric("sluice_worker_prefetch_given_back_total");
    a.stop().await;
    b.stop().await;

    let ran_by = |worker: &'static str| {
        let pool = pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>(
                "SELECT count(*) FROM sluice.job_attempts a JOIN sluice.jobs j ON j.id = a.job_id \
                 WHERE j.job_type = 'sleep' AND a.outcome = 'completed' AND a.worker = $1",
            )
            .bind(worker)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };
    let (by_a, by_b) = (ran_by("a").await, ran_by("b").await);
    let given_back = count(
        &pool,
        "SELECT count(*) FROM sluice.job_attempts WHERE outcome = 'released' AND worker = 'a'",
    )
    .await;
    println!(
        "long jobs: a held up to {a_held_long}, ran {by_a}; b ran {by_b}; a gave back {gave_back} queued jobs ({given_back} released attempts)"
    );
    assert_eq!(by_a + by_b, LONG as i64, "every long job completed once");
    assert_eq!(
        (by_a, by_b),
        (CONCURRENCY as i64, CONCURRENCY as i64),
        "a long job waited in one worker's queue while the other had a free slot"
    );
}
