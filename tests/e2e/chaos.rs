//! Chaos: three real `sluice worker` processes on a throwaway PostgreSQL cluster while a
//! producer enqueues jobs at a steady rate; every ~2 s the busiest worker is SIGKILLed and
//! a new one started in its place, and midway Postgres itself is restarted
//! (`pg_ctl restart -m fast`). At the end every job is `completed` exactly once, jobs
//! with more than one attempt are exactly those whose earlier attempt expired on a killed
//! worker, and the restart consumed no attempt. One job in ten is a durable
//! `durable-steps` job POSTing three steps to a receiver on 127.0.0.1 (issue #43): each
//! completes, and a step reaches the receiver twice only when the request was in flight
//! on a killed worker (the same `Idempotency-Key`, a job whose lease expired): a
//! journaled step is never sent again.
//!
//! Short form by default (CI: 600 jobs at 30/s, ~40 s); `scripts/chaos` runs the long
//! form (2,000 jobs) through `SLUICE_CHAOS_JOBS` / `SLUICE_CHAOS_RATE`.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::durable::receiver::Receiver;
use crate::support::cluster::Cluster;
use crate::support::worker_process::WorkerProcess;
use crate::support::{Fixture, Sluice};
use sluice_store::{JobTypeSpec, KeyScope, NewJob, Store};
use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;

const TENANT: &str = "default";
const WORKERS: usize = 3;
const KILL_EVERY: Duration = Duration::from_secs(2);
const WORKER_ARGS: &[&str] = &[
    "--egress-allow-network",
    "127.0.0.1/32",
    "--concurrency",
    "2",
    "--lease",
    "4s",
    "--reap-interval",
    "500ms",
    "--poll-interval",
    "5s",
    "--drain-timeout",
    "2s",
    "--shutdown-timeout",
    "5s",
];

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Retries a read through the restart window.
async fn query_i64(pool: &PgPool, sql: &str) -> i64 {
    for _ in 0..100 {
        match sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql.to_owned()))
            .fetch_one(pool)
            .await
        {
            Ok(v) => return v,
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    panic!("cannot run {sql}");
}

/// Migrates the throwaway cluster and defines job type `sleep` (25 attempts, retries
/// after 100 ms to 1 s) for tenant `default`.
async fn setup(pool: &PgPool) -> Store {
    sluice_store::MIGRATOR.run(pool).await.expect("migrate");
    let fixture = Fixture::new(pool)
        .job_type_with("sleep", "sleep", |spec| JobTypeSpec {
            max_attempts: 25,
            backoff_base: Some(Duration::from_millis(100)),
            backoff_cap: Some(Duration::from_secs(1)),
            ..spec
        })
        .await;
    fixture.store.clone()
}

/// Every tenth job: a durable `steps` job (the rest sleep 20 ms).
const DURABLE_EVERY: usize = 10;

/// Job type `steps`: durable, on `durable-steps`, allowed to call `receiver`, retried
/// like `sleep`.
fn define_steps(sluice: &Sluice, receiver: &Receiver) {
    sluice.define(
        "steps",
        "durable-steps",
        &[
            "--durable",
            "--egress-allow-network",
            "127.0.0.1/32",
            "--allow-http",
            receiver.origin.as_str(),
            "--max-attempts",
            "25",
            "--backoff-base",
            "100ms",
            "--backoff-cap",
            "1s",
        ],
    );
}

/// Enqueues `jobs` jobs at `rate` per second in small batches, each with an idempotency
/// key so a batch retried after a lost reply creates nothing twice.
async fn produce(
    store: Store,
    jobs: usize,
    rate: usize,
    enqueued: Arc<AtomicUsize>,
    steps: String,
) {
    let batch = (rate / 10).max(1);
    let mut next = tokio::time::Instant::now();
    let mut n = 0;
    while n < jobs {
        let size = batch.min(jobs - n);
        let rows: Vec<NewJob> = (n..n + size)
            .map(|i| {
                let job = if i % DURABLE_EVERY == 0 {
                    NewJob::new(TENANT, "steps", steps.clone().into_bytes())
                } else {
                    NewJob::new(TENANT, "sleep", br#"{"ms":20}"#.to_vec())
                };
                job.with_idempotency_key(format!("chaos-{i}"), KeyScope::Retained)
            })
            .collect();
        while let Err(error) = store.enqueue_many(&rows).await {
            eprintln!("producer: enqueue failed ({error}); retrying");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        n += size;
        enqueued.store(n, Ordering::SeqCst);
        next += Duration::from_millis(100);
        tokio::time::sleep_until(next).await;
    }
}

/// The worker holding the most running jobs (ties: the oldest incarnation).
async fn busiest(pool: &PgPool, workers: &[WorkerProcess]) -> usize {
    let rows: Vec<(String, i64)> = sqlx::query_as(
        "SELECT locked_by, count(*) FROM sluice.jobs WHERE state = 'running' GROUP BY 1",
    )
    .fetch_all(pool)
    .await
    .unwrap_or_default();
    (0..workers.len())
        .max_by_key(|&i| {
            let held = rows
                .iter()
                .find(|(w, _)| *w == workers[i].id)
                .map_or(0, |(_, n)| *n);
            (held, std::cmp::Reverse(i))
        })
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_kills_and_a_postgres_restart_lose_no_job_and_finish_none_twice() {
    let _quiet = crate::support::quiet_machine().await;
    let jobs = setting("SLUICE_CHAOS_JOBS", 600);
    let rate = setting("SLUICE_CHAOS_RATE", 30);
    let cluster = Cluster::start();
    let url = cluster.url();
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .connect(&url)
        .await
        .expect("connect to the throwaway cluster");
    let store = setup(&pool).await;
    let sluice = Sluice {
        url: url.clone(),
        cache: std::env::temp_dir().join(format!("sluice-chaos-cache-{}", cluster.port)),
    };
    let receiver = Receiver::start();
    define_steps(&sluice, &receiver);
    let steps = serde_json::json!({
        "urls": receiver.urls(3),
        "pause_after": { "1": 150, "2": 150 },
    })
    .to_string();
    let start = Instant::now();

    let mut generation = [0usize; WORKERS];
    let mut workers: Vec<WorkerProcess> = (0..WORKERS)
        .map(|i| WorkerProcess::spawn(&sluice, &format!("w{i}.0"), WORKER_ARGS))
        .collect();
    let mut killed: BTreeSet<String> = BTreeSet::new();
    let mut in_flight_at_kill = 0i64;

    let enqueued = Arc::new(AtomicUsize::new(0));
    let producer = tokio::spawn(produce(store.clone(), jobs, rate, enqueued.clone(), steps));
    let mut restart_took = None;
    while !producer.is_finished() {
        tokio::time::sleep(KILL_EVERY).await;
        if restart_took.is_none() && enqueued.load(Ordering::SeqCst) >= jobs / 2 {
            let took = {
                let cluster = &cluster;
                tokio::task::block_in_place(|| cluster.restart())
            };
            eprintln!("chaos: restarted Postgres in {took:?}");
            restart_took = Some(took);
        }
        let victim = busiest(&pool, &workers).await;
        let old = workers[victim].id.clone();
        workers[victim].kill();
        in_flight_at_kill += query_i64(
            &pool,
            &format!(
                "SELECT count(*) FROM sluice.jobs WHERE state = 'running' AND locked_by = '{old}'"
            ),
        )
        .await;
        killed.insert(old);
        generation[victim] += 1;
        let id = format!("w{victim}.{}", generation[victim]);
        workers[victim] = WorkerProcess::spawn(&sluice, &id, WORKER_ARGS);
    }
    producer.await.unwrap();
    assert!(restart_took.is_some(), "the run ended before the restart");

    // Everything finishes once the killed workers' leases expire and are reaped.
    let deadline = Instant::now() + Duration::from_secs(60 + jobs as u64 / 20);
    loop {
        let done = query_i64(
            &pool,
            "SELECT count(*) FROM sluice.jobs WHERE state = 'completed'",
        )
        .await;
        if done as usize == jobs {
            break;
        }
        if Instant::now() > deadline {
            let states: Vec<(String, i64)> = sqlx::query_as(
                "SELECT state::text, count(*) FROM sluice.jobs GROUP BY 1 ORDER BY 1",
            )
            .fetch_all(&pool)
            .await
            .unwrap();
            for w in &workers {
                eprintln!("--- {} ({})\n{}", w.id, w.log_path().display(), w.log());
            }
            eprintln!("--- postgres\n{}", cluster.server_log());
            panic!("only {done} of {jobs} jobs completed; states: {states:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for w in &workers {
        w.wait_for_log("worker started", Duration::from_secs(10));
        w.signal("TERM");
    }
    for w in &mut workers {
        let status = w
            .wait_timeout(Duration::from_secs(10))
            .expect("worker exits");
        assert!(status.success(), "{}: {status}\n{}", w.id, w.log());
    }
    let elapsed = start.elapsed();

    // --- the verdict, from the attempt history
    let total = query_i64(&pool, "SELECT count(*) FROM sluice.jobs").await;
    assert_eq!(total as usize, jobs, "the producer's idempotency keys held");
    let twice: Vec<i64> = sqlx::query_scalar(
        "SELECT job_id FROM sluice.job_attempts WHERE outcome = 'completed' \
         GROUP BY job_id HAVING count(*) > 1",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert!(twice.is_empty(), "jobs completed twice: {twice:?}");
    let multi: HashSet<i64> =
        sqlx::query_scalar::<_, i64>("SELECT id FROM sluice.jobs WHERE attempt > 1")
            .fetch_all(&pool)
            .await
            .unwrap()
            .into_iter()
            .collect();
    let expired: Vec<(i64, String)> = sqlx::query_as(
        "SELECT job_id, worker FROM sluice.job_attempts WHERE outcome = 'lease_expired'",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let on_live: Vec<&(i64, String)> = expired
        .iter()
        .filter(|(_, w)| !killed.contains(w))
        .collect();
    assert!(
        on_live.is_empty(),
        "leases expired on workers that were never killed (an attempt consumed by the \
         restart or a stall): {on_live:?}"
    );
    let killed_jobs: HashSet<i64> = expired.iter().map(|(id, _)| *id).collect();
    assert_eq!(
        multi, killed_jobs,
        "jobs with more than one attempt must be exactly those in flight on a killed worker"
    );
    let other: Vec<(i64, String, Option<String>)> = sqlx::query_as(
        "SELECT job_id, worker, outcome::text FROM sluice.job_attempts \
         WHERE outcome IS NULL OR outcome NOT IN ('completed', 'lease_expired', 'released')",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert!(other.is_empty(), "unexpected attempt outcomes: {other:?}");
    let durable = durable_verdict(&pool, &receiver, &killed_jobs).await;
    let released = query_i64(
        &pool,
        "SELECT count(*) FROM sluice.job_attempts WHERE outcome = 'released'",
    )
    .await;
    let attempts = query_i64(&pool, "SELECT count(*) FROM sluice.job_attempts").await;

    eprintln!(
        "chaos: {jobs} jobs completed once each in {elapsed:.1?}; {attempts} attempts; \
         {} worker kills ({in_flight_at_kill} jobs in flight at the kills); \
         {} jobs with more than one attempt = {} jobs whose lease expired on a killed worker; \
         {released} attempts released without using an attempt; Postgres restart took {:?} \
         and consumed no attempt; 0 jobs completed twice; {durable}",
        killed.len(),
        multi.len(),
        killed_jobs.len(),
        restart_took.unwrap()
    );
}

/// The durable jobs' verdict: each completed with its three answers, and every step
/// reached the receiver once, or again only as the request in flight on a killed worker
/// (the same `Idempotency-Key`, a job whose lease expired). Returns a summary.
async fn durable_verdict(pool: &PgPool, receiver: &Receiver, killed_jobs: &HashSet<i64>) -> String {
    let outputs: Vec<(i64, Option<Vec<u8>>)> =
        sqlx::query_as("SELECT id, output FROM sluice.jobs WHERE job_type = 'steps'")
            .fetch_all(pool)
            .await
            .unwrap();
    assert!(!outputs.is_empty(), "the run had durable jobs");
    for (id, output) in &outputs {
        let output: serde_json::Value =
            serde_json::from_slice(output.as_deref().unwrap_or_default()).unwrap_or_default();
        assert_eq!(
            output,
            serde_json::json!(["step-1", "step-2", "step-3"]),
            "job {id}"
        );
    }
    let mut sent: std::collections::BTreeMap<(i64, u64), Vec<String>> = Default::default();
    for seen in receiver.seen() {
        let key = seen.key.clone().expect("a durable job's request has a key");
        let job: i64 = key
            .strip_prefix("sluice-")
            .and_then(|rest| rest.split('-').next())
            .and_then(|id| id.parse().ok())
            .unwrap_or_else(|| panic!("key {key} names its job"));
        sent.entry((job, seen.step)).or_default().push(key);
    }
    let mut again = 0;
    for ((job, step), keys) in &sent {
        if keys.len() > 1 {
            again += keys.len() - 1;
            assert!(
                killed_jobs.contains(job) && keys.iter().all(|k| *k == keys[0]),
                "job {job} step {step} was sent {} times ({keys:?}) though it was not in \
                 flight on a killed worker: a journaled step was repeated",
                keys.len()
            );
        }
    }
    assert_eq!(
        sent.len(),
        outputs.len() * 3,
        "every step of every durable job was sent"
    );
    format!(
        "{} durable jobs completed, their {} steps sent once each but {again} re-sent in \
         flight at a kill with the same key",
        outputs.len(),
        sent.len()
    )
}
