//! The worker against real Postgres and real components, in-process (`worker::run` over
//! a real store and sandbox). This module holds the area's fixture (`setup`, `drain`,
//! `spawn_worker`, `outcomes`); the cases are in its submodules: `attempts` (retries and
//! dead-lettering, fresh instances per attempt, hostile guests), `cancel` (cancellation of
//! a running guest, a cancel found at shutdown), `recovery` (a worker that dies mid-job
//! replaced without its late result overwriting anything, a claim whose reply was lost),
//! `prefetch` (the prefetch queue and its lease) and `registry` (a changed job type seen
//! within the TTL).

mod attempts;
mod cancel;
mod prefetch;
mod recovery;
mod registry;

use std::time::Duration;

use crate::support::{Fixture, wait_for};
use sluice_sandbox::Sandbox;
use sluice_store::{AttemptOutcome, JobState, JobTypeSpec, Store};
use sluice_worker::{self as worker, WorkerConfig, WorkerSummary};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

/// A job type of tenant `default` named as the sample component that runs it: its
/// attempts, and a timeout in milliseconds (or none).
type Task<'a> = (&'a str, i32, Option<u64>);

/// Tenant `default` with one job type per task (retries after 10 to 50 ms) and a sandbox
/// of 8; worker warnings (a failed claim, a dropped outcome) show up in a failing test's
/// output.
async fn setup(pool: &PgPool, tasks: &[Task<'_>]) -> Fixture {
    let mut fixture = Fixture::new(pool).log("warn,sluice=info").sandbox_of(8);
    for &(task, max_attempts, timeout_ms) in tasks {
        fixture = fixture.job_type_with(task, task, move |spec| JobTypeSpec {
            max_attempts,
            backoff_base: Some(Duration::from_millis(10)),
            backoff_cap: Some(Duration::from_millis(50)),
            timeout: timeout_ms.map(Duration::from_millis),
            // With a timeout, the clock must be what stops a spinning guest: a fast CPU
            // burns the default 5·10⁹ fuel units in well under a second.
            fuel: timeout_ms.map(|_| 1_000_000_000_000),
            ..spec
        });
    }
    fixture.await
}

async fn enqueue(fixture: &Fixture, task: &str, payload: &str) -> i64 {
    fixture.jobs().pending(fixture.job(task, payload)).await
}

fn config(name: &str, concurrency: usize) -> WorkerConfig {
    let mut config = WorkerConfig::new(name);
    config.concurrency = concurrency;
    config.drain = true;
    config.drain_horizon = Duration::from_secs(2);
    config.idle.safety_poll = Duration::from_millis(50);
    config.idle.backoff_first = Duration::from_millis(50);
    config
}

async fn drain(store: &Store, sandbox: &Sandbox, concurrency: usize) -> WorkerSummary {
    let run = worker::run(
        store.clone(),
        sandbox.clone(),
        config("drainer", concurrency),
        CancellationToken::new(),
    );
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("worker drains within a minute")
        .unwrap()
}

/// A worker that runs until the returned token is cancelled (no `--drain`).
fn spawn_worker(
    store: &Store,
    sandbox: &Sandbox,
    mut cfg: WorkerConfig,
) -> (
    tokio::task::JoinHandle<anyhow::Result<WorkerSummary>>,
    CancellationToken,
) {
    cfg.drain = false;
    let shutdown = CancellationToken::new();
    let worker = tokio::spawn(worker::run(
        store.clone(),
        sandbox.clone(),
        cfg,
        shutdown.clone(),
    ));
    (worker, shutdown)
}

/// The outcomes of a job's attempts, oldest first.
async fn outcomes(store: &Store, id: i64) -> Vec<Option<AttemptOutcome>> {
    let attempts = store.attempts(None, id).await.unwrap();
    attempts.iter().map(|a| a.outcome).collect()
}
