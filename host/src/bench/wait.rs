//! Wait latency (issue #41): how soon a wait for a job's finish — the store's
//! `FinishWaits`, behind `GET /v1/jobs/{id}?wait=` and `sluice jobs wait` — answers after
//! the statement that finishes the job commits. One job at a time: enqueue it, claim it
//! as a worker would, start a wait (which marks the job and sleeps), complete the job
//! through the worker's own `complete`, and time from that call's return to the wait's.
//! So it covers the trigger's NOTIFY, its delivery to the shared LISTEN connection, the
//! fan-out to the wait and the wait's read of the finished job; not the HTTP round trip.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;
use sluice_store::{ClaimRequest, Completion, FinishWaits, JobState, NewJob, Store};

use super::{BENCH_TENANT, percentile};

/// The job type waited for (its jobs never run: the benchmark claims and completes them).
const WAIT_TYPE: &str = "echo";

async fn one(store: &Store, waits: &FinishWaits) -> anyhow::Result<f64> {
    let id = store
        .enqueue(&NewJob::new(BENCH_TENANT, WAIT_TYPE, b"{}".to_vec()))
        .await?
        .id;
    let claimed = store
        .claim(&ClaimRequest {
            worker: "bench-wait".into(),
            limit: 1,
            lease: Duration::from_secs(60),
            tenants: Some(vec![BENCH_TENANT.into()]),
            job_types: Some(vec![WAIT_TYPE.into()]),
            max_contract: sluice_sandbox::Contract::NEWEST.minor(),
            secret_keys: Vec::new(),
            skip_tenants: None,
        })
        .await?
        .pop()
        .context("claim the job just enqueued")?;
    if claimed.lease.job_id != id {
        bail!(
            "claimed job {} instead of {id}: run on an empty database",
            claimed.lease.job_id
        );
    }
    let waiting = {
        let waits = waits.clone();
        tokio::spawn(async move {
            waits
                .wait(Some(BENCH_TENANT), id, Duration::from_secs(60))
                .await
        })
    };
    // Let the wait mark the job and go to sleep.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let done = Completion {
        output: b"{}".to_vec(),
        fuel_used: None,
        follow_ups: Vec::new(),
        log: None,
    };
    store.complete(&claimed.lease, &done).await?;
    let committed = Instant::now();
    let job = waiting.await??.context("the job exists")?;
    let took = committed.elapsed();
    if job.state != JobState::Completed {
        bail!("the wait answered with job {id} {}", job.state);
    }
    Ok(took.as_secs_f64() * 1e3)
}

pub async fn wait(store: &Store, jobs: usize) -> anyhow::Result<serde_json::Value> {
    let waits = FinishWaits::new(store.clone());
    // Warm-up, untimed: the LISTEN connection opens, the pool plans its statements.
    for _ in 0..5 {
        one(store, &waits).await?;
    }
    if !waits.listening() {
        bail!("the waits are not listening: LISTEN failed (see the log)");
    }
    eprintln!("{jobs} jobs, one at a time: claimed, waited for, completed");
    let mut latencies_ms = Vec::with_capacity(jobs);
    for _ in 0..jobs {
        latencies_ms.push(one(store, &waits).await?);
    }
    latencies_ms.sort_by(f64::total_cmp);
    Ok(json!({
        "cmd": "wait", "m": jobs,
        "p50_ms": percentile(&latencies_ms, 50.0), "p99_ms": percentile(&latencies_ms, 99.0),
        "max_ms": latencies_ms.last().copied().unwrap_or(0.0),
    }))
}
