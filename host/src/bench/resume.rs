//! Resume latency of a durable wait (issue #43): an in-process worker (LISTEN on) runs
//! `await-signal` jobs of a durable type, one at a time; once a job waits (state
//! `waiting`, its slot free), it is sent a signal, and its latency is the moment its
//! guest continued after the await (`resumed_at_us`, a live clock read in the guest)
//! minus the moment the signal's commit was acknowledged here — both read from this
//! machine's clock. So it covers the signal's wake-up and NOTIFY, the claim, a fresh
//! instance and the replay of the journal up to the await.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use serde_json::json;
use sluice_sandbox::Sandbox;
use sluice_store::{JobState, NewJob, Store};
use tokio_util::sync::CancellationToken;

use super::{BENCH_TENANT, percentile};
use sluice_worker::{self as worker, WorkerConfig};

/// The durable job type the benchmark enqueues (component: the `await-signal` sample).
pub const RESUME_TYPE: &str = "await-signal";

fn unix_micros() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i128)
        .unwrap_or(0)
}

/// Polls job `id` every millisecond until `done` holds for it, for up to `limit`.
async fn until(
    store: &Store,
    id: i64,
    limit: Duration,
    done: impl Fn(&sluice_store::JobRecord) -> bool,
) -> anyhow::Result<sluice_store::JobRecord> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(job) = store.get(Some(BENCH_TENANT), id).await?
            && done(&job)
        {
            return Ok(job);
        }
        if Instant::now() > deadline {
            bail!("job {id} did not get there within {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// One wait and resume: the latency in milliseconds.
async fn one(store: &Store, i: usize) -> anyhow::Result<f64> {
    let job = NewJob::new(BENCH_TENANT, RESUME_TYPE, b"{}".to_vec());
    let id = store.enqueue(&job).await?.id;
    until(store, id, Duration::from_secs(30), |j| {
        j.state == JobState::Waiting
    })
    .await?;
    let payload = json!({ "i": i });
    store
        .send_signal(Some(BENCH_TENANT), id, "go", Some(&payload))
        .await?;
    let committed = unix_micros();
    let done = until(store, id, Duration::from_secs(30), |j| j.output.is_some()).await?;
    let output: serde_json::Value =
        serde_json::from_slice(done.output.as_deref().unwrap_or_default())
            .context("await-signal's output is JSON")?;
    let resumed = output["resumed_at_us"]
        .as_i64()
        .context("await-signal's output has resumed_at_us")?;
    Ok((i128::from(resumed) - committed) as f64 / 1e3)
}

pub async fn resume(
    store: &Store,
    sandbox: Sandbox,
    jobs: usize,
) -> anyhow::Result<serde_json::Value> {
    let mut config = WorkerConfig::new("bench-resume");
    config.concurrency = 4;
    config.tenants = Some(vec![BENCH_TENANT.into()]);
    let stop = CancellationToken::new();
    let worker = tokio::spawn(worker::run(store.clone(), sandbox, config, stop.clone()));
    // Warm-up, untimed: the component loads, the pool's connections plan their statements.
    for i in 0..5 {
        one(store, i).await?;
    }
    eprintln!("{jobs} durable jobs, each awaiting a signal, then signalled (one at a time)");
    let mut latencies_ms = Vec::with_capacity(jobs);
    for i in 0..jobs {
        latencies_ms.push(one(store, i).await?);
    }
    stop.cancel();
    worker.await.context("worker task")??;
    latencies_ms.sort_by(f64::total_cmp);
    Ok(json!({
        "cmd": "resume", "m": jobs,
        "p50_ms": percentile(&latencies_ms, 50.0), "p99_ms": percentile(&latencies_ms, 99.0),
        "max_ms": latencies_ms.last().copied().unwrap_or(0.0),
    }))
}
