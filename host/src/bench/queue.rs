//! Queue benchmarks: bulk enqueue, batch claim + complete, and a timed worker drain.

use std::time::{Duration, Instant};

use serde_json::json;
use sluice_sandbox::Sandbox;
use sluice_store::{ClaimRequest, Completion, NewJob, Store};
use tokio_util::sync::CancellationToken;

use super::BENCH_TENANT;
use sluice_worker::{self as worker, Prefetch, WorkerConfig};

fn echo_jobs(count: usize) -> Vec<NewJob> {
    jobs_of(DrainTask::Echo, count, None)
}

fn jobs_of(task: DrainTask, count: usize, target: Option<&str>) -> Vec<NewJob> {
    (0..count)
        .map(|i| {
            let payload = match task {
                // One child each, due in an hour: the drain times the parents alone.
                DrainTask::FanOut => {
                    format!("{{\"type\":\"{FAN_OUT_CHILD}\",\"count\":1,\"delay_ms\":3600000}}")
                }
                DrainTask::Steps => {
                    json!({ "urls": [format!("{}/{i}", target.unwrap_or_default())] }).to_string()
                }
                _ => format!("{{\"n\":{i}}}"),
            };
            NewJob::new(BENCH_TENANT, task.job_type(), payload.into_bytes())
        })
        .collect()
}

/// The job type of the children `fan-out` jobs enqueue in a drain (an `echo`).
pub const FAN_OUT_CHILD: &str = "child";

/// The sample a drain's jobs run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DrainTask {
    Echo,
    Fatal,
    /// Each job enqueues one follow-up job (inserted with its completion).
    FanOut,
    /// Each job POSTs once to a receiver the bench runs on 127.0.0.1 (the Rust
    /// `durable-steps` sample, one URL): with `--durable`, journaled.
    Steps,
}

impl DrainTask {
    /// The job type the bench registers for this sample (named after it).
    pub fn job_type(self) -> &'static str {
        match self {
            DrainTask::Echo => "echo",
            DrainTask::Fatal => "fatal",
            DrainTask::FanOut => "fan-out",
            DrainTask::Steps => "durable-steps",
        }
    }
}

/// What `sluice bench drain` runs.
pub struct Drain {
    pub jobs: usize,
    pub concurrency: usize,
    pub prefetch: Prefetch,
    pub task: DrainTask,
    /// The receiver's origin (`--task steps`).
    pub target: Option<String>,
    /// Concurrency keys, round-robin (0: none).
    pub keys: usize,
    /// The jobs are already queued: enqueue none and skip the ANALYZE.
    pub queued: bool,
}

pub async fn enqueue(
    store: &Store,
    jobs: usize,
    batch: usize,
) -> anyhow::Result<serde_json::Value> {
    let all = echo_jobs(jobs);
    eprintln!("enqueueing {jobs} jobs in batches of {batch}");
    let started = Instant::now();
    for chunk in all.chunks(batch.max(1)) {
        store.enqueue_many(chunk).await?;
    }
    let seconds = started.elapsed().as_secs_f64();
    Ok(
        json!({ "cmd": "enqueue", "n": jobs, "batch": batch, "seconds": seconds, "jobs_per_s": jobs as f64 / seconds }),
    )
}

pub async fn batch(store: &Store, size: usize, rounds: usize) -> anyhow::Result<serde_json::Value> {
    for chunk in echo_jobs(size * rounds).chunks(10_000) {
        store.enqueue_many(chunk).await?;
    }
    eprintln!("{rounds} rounds of claim {size} + complete {size}");
    let request = ClaimRequest {
        worker: "bench".into(),
        limit: size as u32,
        lease: Duration::from_secs(60),
        tenants: None,
        job_types: None,
        max_contract: sluice_sandbox::Contract::NEWEST.minor(),
        secret_keys: Vec::new(),
        skip_tenants: None,
    };
    let mut claim_ms = Vec::with_capacity(rounds);
    let mut complete_ms = Vec::with_capacity(rounds);
    let started = Instant::now();
    let mut done = 0usize;
    for _ in 0..rounds {
        let t = Instant::now();
        let claimed = store.claim(&request).await?;
        claim_ms.push(t.elapsed().as_secs_f64() * 1e3);
        let outcomes: Vec<_> = claimed
            .iter()
            .map(|job| {
                (
                    job.lease,
                    Completion {
                        output: job.payload.clone(),
                        fuel_used: None,
                        follow_ups: Vec::new(),
                        log: None,
                    },
                )
            })
            .collect();
        let t = Instant::now();
        let results = store.complete_many(&outcomes).await?;
        complete_ms.push(t.elapsed().as_secs_f64() * 1e3);
        done += results.iter().filter(|r| r.is_ok()).count();
    }
    let seconds = started.elapsed().as_secs_f64();
    claim_ms.sort_by(f64::total_cmp);
    complete_ms.sort_by(f64::total_cmp);
    Ok(json!({
        "cmd": "batch", "size": size, "rounds": rounds, "completed": done, "seconds": seconds,
        "jobs_per_s": done as f64 / seconds,
        "claim_p50_ms": super::percentile(&claim_ms, 50.0),
        "complete_p50_ms": super::percentile(&complete_ms, 50.0),
    }))
}

/// Times a worker draining `jobs` jobs of one sample. `jobs_per_s` counts the jobs that
/// reached their end (completed, or dead for `fatal`).
pub async fn drain(
    store: &Store,
    sandbox: Sandbox,
    drain: Drain,
) -> anyhow::Result<serde_json::Value> {
    let Drain {
        jobs,
        concurrency,
        prefetch,
        task,
        target,
        keys,
        queued,
    } = drain;
    if !queued {
        let mut all = jobs_of(task, jobs, target.as_deref());
        if keys > 0 {
            for (i, job) in all.iter_mut().enumerate() {
                job.concurrency_key = Some(format!("k{}", i % keys));
            }
        }
        for chunk in all.chunks(10_000) {
            store.enqueue_many(chunk).await?;
        }
        // A queue with any history has planner statistics (autovacuum analyzes the table
        // as it churns); the bench's brand-new table has none, and without them Postgres
        // planned some batched outcomes as scans of the whole table.
        store.analyze_jobs().await?;
    }
    let name = task.job_type();
    eprintln!("{jobs} {name} jobs queued; draining with concurrency {concurrency}");
    let mut config = drain_config("bench-drain", concurrency, prefetch);
    // The `OTEL_*` variables trace the drain as they would a worker (docs/observability.md).
    config.tracer = crate::traces::from_env("sluice-bench")?;
    let tracer = config.tracer.clone();
    let started = Instant::now();
    let summary = worker::run(store.clone(), sandbox, config, CancellationToken::new()).await?;
    let seconds = started.elapsed().as_secs_f64();
    crate::traces::flush(&tracer).await;
    let spans = tracer.stats();
    // With `fan-out` this counts its children too (pending, due in an hour): `jobs`.
    let pending_after = store.count_pending(Some(BENCH_TENANT)).await?;
    let finished = summary.completed + summary.dead;
    Ok(json!({
        "cmd": "work", "task": name, "n": jobs, "c": concurrency, "prefetch": prefetch,
        "seconds": seconds, "jobs_per_s": finished as f64 / seconds,
        "pending_after": pending_after,
        "spans_exported": spans.exported_spans, "spans_dropped": spans.dropped_spans,
    }))
}

/// A worker that runs the bench tenant's jobs and stops once none is runnable.
pub(super) fn drain_config(name: &str, concurrency: usize, prefetch: Prefetch) -> WorkerConfig {
    let mut config = WorkerConfig::new(name);
    config.concurrency = concurrency;
    config.prefetch = prefetch;
    config.drain = true;
    config.drain_horizon = Duration::ZERO;
    config.tenants = Some(vec![BENCH_TENANT.into()]);
    config
}
