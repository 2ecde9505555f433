//! `sluice bench fairness`: how long a light tenant's job waits for a slot while another
//! tenant floods the queue (issue #22).
//!
//! One or more in-process workers (the same `worker::run` as `sluice worker`) serve two
//! tenants. The light tenant enqueues one `clock` job every `every_ms` from its own pool
//! connection, first alone, then beside a flood tenant with `flood` queued `sleep` jobs
//! of `flood_ms`. A light job's start latency is the time its guest code began (what
//! `clock` returns) minus the job's `created_at`, both read from this machine's clock.
//! Not the attempt's `started_at`: a prefetched job's attempt starts at its claim, and
//! it may then wait in the worker's queue for a slot — the very wait measured here.
//!
//! Owns timing and reporting only; the claim order is the store's and the worker's.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;
use sluice_sandbox::Sandbox;
use sluice_store::{NewJob, Store};
use tokio_util::sync::CancellationToken;

use super::{BENCH_TENANT, percentile};
use sluice_worker::{self as worker, Prefetch, WorkerConfig};

/// The light tenant (the flood is [`BENCH_TENANT`]).
pub const LIGHT_TENANT: &str = "bench-light";
/// The flood tenant's job type (the `sleep` sample).
pub const SLEEP_TYPE: &str = "sleep";
/// The light tenant's job type (the `clock` sample: returns when its guest began).
pub const CLOCK_TYPE: &str = "clock";

/// What `sluice bench fairness` runs.
#[derive(Clone, Debug)]
pub struct Fairness {
    pub flood: usize,
    pub flood_ms: u64,
    pub light: usize,
    pub every_ms: u64,
    pub concurrency: usize,
    pub prefetch: Prefetch,
    pub workers: usize,
    pub spare_slots: usize,
}

/// Start latencies of one phase, in milliseconds, sorted; the same less each job's
/// enqueue round trip (what it waited once its enqueue had returned, so after its commit
/// was durable: a slow fsync shows in the first, not in the second); and how long each
/// took to be claimed (its attempt's `started_at`, the figure before session 14: with a
/// prefetch queue, a job is claimed before it starts).
///
/// The first light job of the flood phase is enqueued right after the flood, the moment
/// the flood takes every slot at once: it waits for the flood's first job to end, and
/// `first_ms` / `p99_after_first_ms` tell that moment apart from the running flood.
struct Phase {
    latencies_ms: Vec<f64>,
    first_ms: f64,
    after_first_ms: Vec<f64>,
    after_commit_ms: Vec<f64>,
    enqueue_ms: Vec<f64>,
    claimed_ms: Vec<f64>,
}

impl Phase {
    fn report(&self) -> serde_json::Value {
        let l = &self.latencies_ms;
        let a = &self.after_commit_ms;
        let e = &self.enqueue_ms;
        json!({
            "jobs": l.len(),
            "p50_ms": percentile(l, 50.0),
            "p99_ms": percentile(l, 99.0),
            "max_ms": l.last().copied().unwrap_or(0.0),
            "first_ms": self.first_ms,
            "p99_after_first_ms": percentile(&self.after_first_ms, 99.0),
            "after_commit_p99_ms": percentile(a, 99.0),
            "after_commit_max_ms": a.last().copied().unwrap_or(0.0),
            "enqueue_p99_ms": percentile(e, 99.0),
            "enqueue_max_ms": e.last().copied().unwrap_or(0.0),
            "claimed_p99_ms": percentile(&self.claimed_ms, 99.0),
        })
    }
}

pub async fn fairness(
    store: &Store,
    sandbox: Sandbox,
    f: Fairness,
) -> anyhow::Result<serde_json::Value> {
    if f.workers == 0 || f.concurrency == 0 || f.light == 0 || f.every_ms == 0 {
        bail!("--workers, --concurrency, --light and --every-ms must be at least 1");
    }
    let stop = CancellationToken::new();
    let mut handles = Vec::with_capacity(f.workers);
    for i in 0..f.workers {
        let mut config = WorkerConfig::new(format!("bench-fairness-{i}"));
        config.concurrency = f.concurrency;
        config.prefetch = f.prefetch;
        config.spare_slots = f.spare_slots;
        config.tenants = Some(vec![BENCH_TENANT.into(), LIGHT_TENANT.into()]);
        let run = worker::run(store.clone(), sandbox.clone(), config, stop.clone());
        handles.push(tokio::spawn(run));
    }
    let outcome = phases(store, &f).await;
    stop.cancel();
    for handle in handles {
        handle.await.context("worker task")??;
    }
    let (solo, flood, flood_left) = outcome?;
    let solo_p99 = percentile(&solo.latencies_ms, 99.0);
    let flood_p99 = percentile(&flood.latencies_ms, 99.0);
    let target = f.flood_ms as f64 + solo_p99;
    Ok(json!({
        "cmd": "fairness", "flood": f.flood, "flood_ms": f.flood_ms, "light": f.light,
        "every_ms": f.every_ms, "c": f.concurrency,
        "prefetch": f.prefetch, "workers": f.workers, "spare_slots": f.spare_slots,
        "solo": solo.report(), "beside_flood": flood.report(),
        "p99_ratio": if solo_p99 > 0.0 { flood_p99 / solo_p99 } else { 0.0 },
        "target_p99_ms": target, "target_met": flood_p99 <= target,
        // Flood jobs still pending when the last light job started: 0 means the flood
        // ran out during the measurement, and the "beside" figures are not beside it.
        "flood_pending_at_end": flood_left,
    }))
}

/// Warm-up, the solo phase, then the flood phase; returns both and the flood left over.
async fn phases(store: &Store, f: &Fairness) -> anyhow::Result<(Phase, Phase, i64)> {
    // Warm-up, untimed: the first jobs load both components and open pool connections.
    // Without the flood's type among them, the flood's first jobs would load it, and the
    // light job enqueued beside them would wait for that load too: a cold start, not the
    // flood (session 18: 15 ms of the first light job's 50).
    run_one(store, sleep_job(BENCH_TENANT, 1)).await?;
    light_phase(store, f, 5.min(f.light)).await?;
    eprintln!("solo: {} light jobs, one every {} ms", f.light, f.every_ms);
    let solo = light_phase(store, f, f.light).await?;
    eprintln!(
        "flood: {} jobs of {} ms queued by {BENCH_TENANT}",
        f.flood, f.flood_ms
    );
    let flood_jobs: Vec<NewJob> = (0..f.flood)
        .map(|_| sleep_job(BENCH_TENANT, f.flood_ms))
        .collect();
    for chunk in flood_jobs.chunks(5_000) {
        store.enqueue_many(chunk).await?;
    }
    let beside = light_phase(store, f, f.light).await?;
    let left = store.count_pending(Some(BENCH_TENANT)).await?;
    Ok((solo, beside, left))
}

/// Enqueues `job` and waits until it has an output (it ran).
async fn run_one(store: &Store, job: NewJob) -> anyhow::Result<()> {
    let (tenant, id) = (job.tenant.clone(), store.enqueue(&job).await?.id);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let job = store.get(Some(&tenant), id).await?;
        if job.context("a warm-up job vanished")?.output.is_some() {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("warm-up job {id} did not run within a minute");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn sleep_job(tenant: &str, ms: u64) -> NewJob {
    NewJob::new(tenant, SLEEP_TYPE, format!("{{\"ms\":{ms}}}").into_bytes())
}

/// Enqueues `count` light jobs at the fixed rate and waits until each has run.
async fn light_phase(store: &Store, f: &Fairness, count: usize) -> anyhow::Result<Phase> {
    let gap = Duration::from_millis(f.every_ms);
    let start = tokio::time::Instant::now();
    let mut ids = Vec::with_capacity(count);
    let mut enqueue_ms = Vec::with_capacity(count);
    for i in 0..count {
        tokio::time::sleep_until(start + gap * i as u32).await;
        let sent = Instant::now();
        let id = store
            .enqueue(&NewJob::new(LIGHT_TENANT, CLOCK_TYPE, b"{}".to_vec()))
            .await?
            .id;
        enqueue_ms.push(sent.elapsed().as_secs_f64() * 1e3);
        ids.push(id);
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut latencies_ms = Vec::with_capacity(count);
    let mut after_commit_ms = Vec::with_capacity(count);
    let mut claimed_ms = Vec::with_capacity(count);
    for (id, rtt) in ids.into_iter().zip(enqueue_ms.iter().copied()) {
        loop {
            let job = store
                .get(Some(LIGHT_TENANT), id)
                .await?
                .context("a light job vanished")?;
            if let Some(output) = &job.output {
                let began_us: i64 = std::str::from_utf8(output)?
                    .trim()
                    .parse()
                    .context("the clock sample's output is not a time")?;
                let waited = began_us - job.created_at.timestamp_micros();
                let waited = waited as f64 / 1e3;
                latencies_ms.push(waited);
                after_commit_ms.push((waited - rtt).max(0.0));
                let attempts = store.attempts(Some(LIGHT_TENANT), id).await?;
                let first = attempts.first().context("a job ran without an attempt")?;
                let claimed = first.started_at - job.created_at;
                claimed_ms.push(claimed.num_microseconds().unwrap_or(i64::MAX) as f64 / 1e3);
                break;
            }
            if Instant::now() > deadline {
                bail!("light job {id} did not run within a minute");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let first_ms = latencies_ms.first().copied().unwrap_or(0.0);
    let mut after_first_ms = latencies_ms.get(1..).unwrap_or_default().to_vec();
    for v in [
        &mut latencies_ms,
        &mut after_first_ms,
        &mut after_commit_ms,
        &mut enqueue_ms,
        &mut claimed_ms,
    ] {
        v.sort_by(f64::total_cmp);
    }
    Ok(Phase {
        latencies_ms,
        first_ms,
        after_first_ms,
        after_commit_ms,
        enqueue_ms,
        claimed_ms,
    })
}
