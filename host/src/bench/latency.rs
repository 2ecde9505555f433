//! Pickup latency and claim cost with a deep table.
//!
//! `latency`: an idle in-process worker (LISTEN on) runs the `clock` sample, which returns
//! the wall-clock time at which its guest code began; jobs are enqueued one by one at a
//! fixed rate, and each job's latency is that guest start minus the moment its enqueue
//! call returned (the commit was acknowledged) — both read from this machine's clock.
//! `backlog`: fills the table with ready and future jobs, then times single claims and
//! batch claims through `Store::claim`, the worker's own claim.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use serde_json::json;
use sluice_sandbox::Sandbox;
use sluice_store::{ClaimRequest, Completion, NewJob, RunAt, Store};
use tokio_util::sync::CancellationToken;

use super::{BENCH_TENANT, percentile};
use sluice_worker::{self as worker, WorkerConfig};

/// The job type the latency benchmark enqueues (component: the `clock` sample).
pub const CLOCK_TYPE: &str = "clock";

fn unix_micros() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i128)
        .unwrap_or(0)
}

pub async fn latency(
    store: &Store,
    sandbox: Sandbox,
    jobs: usize,
    rate: f64,
    concurrency: usize,
) -> anyhow::Result<serde_json::Value> {
    if rate.is_nan() || rate <= 0.0 {
        bail!("--rate must be positive, got {rate}");
    }
    let mut config = WorkerConfig::new("bench-latency");
    config.concurrency = concurrency;
    config.tenants = Some(vec![BENCH_TENANT.into()]);
    let stop = CancellationToken::new();
    let worker = tokio::spawn(worker::run(store.clone(), sandbox, config, stop.clone()));
    // Warm-up, untimed: the first job loads the component into the worker (a compile or
    // a disk-cache load), and a second of jobs at the same rate opens and warms the pool
    // connections the worker will use (a fresh connection plans the claim function once:
    // ~20-40 ms). The figures then measure pickup by a running worker, not its start.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let warm_gap = Duration::from_secs_f64(1.0 / rate);
    let warm_count = (rate.ceil() as usize).clamp(1, 50);
    let mut warm = Vec::with_capacity(warm_count);
    for i in 0..warm_count {
        let job = NewJob::new(
            BENCH_TENANT,
            CLOCK_TYPE,
            format!("warm-up {i}").into_bytes(),
        );
        warm.push(store.enqueue(&job).await?.id);
        tokio::time::sleep(warm_gap).await;
    }
    let warm_deadline = Instant::now() + Duration::from_secs(60);
    for id in warm {
        while store
            .get(Some(BENCH_TENANT), id)
            .await?
            .and_then(|j| j.output)
            .is_none()
        {
            if Instant::now() > warm_deadline {
                bail!("the warm-up jobs did not complete within a minute");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    // Let the worker go idle again before the first timed job.
    tokio::time::sleep(Duration::from_millis(500)).await;

    eprintln!("enqueueing {jobs} clock jobs at {rate}/s");
    let mut committed: HashMap<i64, i128> = HashMap::with_capacity(jobs);
    let gap = Duration::from_secs_f64(1.0 / rate);
    let start = tokio::time::Instant::now();
    for i in 0..jobs {
        tokio::time::sleep_until(start + gap * i as u32).await;
        let job = NewJob::new(BENCH_TENANT, CLOCK_TYPE, format!("{i}").into_bytes());
        let id = store.enqueue(&job).await?.id;
        committed.insert(id, unix_micros());
    }

    let deadline = Instant::now() + Duration::from_secs(30);
    let mut latencies_ms = Vec::with_capacity(jobs);
    let mut waiting: Vec<i64> = committed.keys().copied().collect();
    while !waiting.is_empty() && Instant::now() < deadline {
        let mut still = Vec::new();
        for id in waiting {
            match store
                .get(Some(BENCH_TENANT), id)
                .await?
                .and_then(|j| j.output)
            {
                Some(output) => {
                    let started: i128 = std::str::from_utf8(&output)
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .context("clock output is not a number")?;
                    latencies_ms.push((started - committed[&id]) as f64 / 1e3);
                }
                None => still.push(id),
            }
        }
        waiting = still;
        if !waiting.is_empty() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    stop.cancel();
    worker.await.context("worker task")??;
    latencies_ms.sort_by(f64::total_cmp);
    Ok(json!({
        "cmd": "latency", "m": jobs, "rate": rate, "received": latencies_ms.len(),
        "p50_ms": percentile(&latencies_ms, 50.0), "p99_ms": percentile(&latencies_ms, 99.0),
        "max_ms": latencies_ms.last().copied().unwrap_or(0.0),
    }))
}

/// The job type whose keys `backlog --held-keys` holds at their cap (component `echo`).
pub const HELD_TYPE: &str = "held";

/// Untimed: `jobs` jobs of [`HELD_TYPE`] over `keys` concurrency keys, the type capped at
/// one running job per key, and one job of each key claimed (left running under an
/// hour's lease), so every key is at its cap with the rest pending behind it.
pub async fn hold_keys(store: &Store, keys: usize, jobs: usize) -> anyhow::Result<()> {
    anyhow::ensure!(jobs >= keys, "--held-jobs must be at least --held-keys");
    eprintln!("holding {keys} keys at their cap, {jobs} jobs behind them (untimed)");
    let cap = sluice_store::FlowChange {
        max_running_per_key: Some(Some(1)),
        ..sluice_store::FlowChange::default()
    };
    store.set_flow(BENCH_TENANT, HELD_TYPE, &cap).await?;
    let all: Vec<NewJob> = (0..jobs)
        .map(|i| {
            NewJob::new(BENCH_TENANT, HELD_TYPE, b"{}".to_vec())
                .with_concurrency_key(format!("k{}", i % keys))
        })
        .collect();
    for chunk in all.chunks(10_000) {
        store.enqueue_many(chunk).await?;
    }
    let request = ClaimRequest {
        worker: "bench-held".into(),
        limit: 1_000,
        lease: Duration::from_secs(3600),
        tenants: None,
        job_types: Some(vec![HELD_TYPE.into()]),
        max_contract: sluice_sandbox::Contract::NEWEST.minor(),
        secret_keys: Vec::new(),
        skip_tenants: None,
    };
    let mut running = 0;
    loop {
        let claimed = store.claim(&request).await?.len();
        if claimed == 0 {
            break;
        }
        running += claimed;
    }
    anyhow::ensure!(
        running == keys,
        "expected one running job per key, got {running} for {keys} keys"
    );
    Ok(())
}

pub async fn backlog(
    store: &Store,
    ready: usize,
    scheduled: usize,
    rounds: usize,
) -> anyhow::Result<serde_json::Value> {
    eprintln!("filling: {ready} ready and {scheduled} scheduled jobs (untimed)");
    let later = RunAt::Delay(Duration::from_secs(24 * 3600));
    let fill = |n: usize, run_at: Option<RunAt>| {
        (0..n).map(move |i| {
            let job = NewJob::new(BENCH_TENANT, "echo", format!("{i}").into_bytes());
            match run_at {
                Some(at) => job.with_run_at(at),
                None => job,
            }
        })
    };
    let jobs: Vec<NewJob> = fill(scheduled, Some(later))
        .chain(fill(ready, None))
        .collect();
    for chunk in jobs.chunks(10_000) {
        store.enqueue_many(chunk).await?;
    }
    drop(jobs);
    store.analyze_jobs().await?;

    let request = |limit| ClaimRequest {
        worker: "bench-backlog".into(),
        limit,
        lease: Duration::from_secs(60),
        tenants: None,
        job_types: None,
        max_contract: sluice_sandbox::Contract::NEWEST.minor(),
        secret_keys: Vec::new(),
        skip_tenants: None,
    };
    let mut one_ms = Vec::with_capacity(rounds);
    let mut hundred_ms = Vec::with_capacity(rounds);
    eprintln!("{rounds} rounds of claim 1 and claim 100 (each completed at once)");
    for _ in 0..rounds {
        for (limit, samples) in [(1, &mut one_ms), (100, &mut hundred_ms)] {
            let t = Instant::now();
            let claimed = store.claim(&request(limit)).await?;
            samples.push(t.elapsed().as_secs_f64() * 1e3);
            let outcomes: Vec<_> = claimed
                .iter()
                .map(|j| (j.lease, Completion::default()))
                .collect();
            store.complete_many(&outcomes).await?;
        }
    }
    one_ms.sort_by(f64::total_cmp);
    hundred_ms.sort_by(f64::total_cmp);
    Ok(json!({
        "cmd": "backlog", "ready": ready, "scheduled": scheduled, "rounds": rounds,
        "claim1_p50_ms": percentile(&one_ms, 50.0), "claim1_p99_ms": percentile(&one_ms, 99.0),
        "claim100_p50_ms": percentile(&hundred_ms, 50.0),
        "claim100_p99_ms": percentile(&hundred_ms, 99.0),
    }))
}
