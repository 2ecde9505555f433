//! Durable jobs end to end (`docs/durable.md`): real `sluice worker` processes, real
//! Postgres, the `durable-steps` sample POSTing to a real receiver on 127.0.0.1
//! (`durable/receiver.rs`). `crash`: a worker SIGKILLed between steps leaves a durable
//! job that a second worker finishes without repeating a journaled step (and the same
//! type not durable repeats them); the request in flight at the kill carries the same
//! `Idempotency-Key` in both runs; the type re-pointed to another component meanwhile
//! does not change the job's (pinned at its first attempt). `refusals`: a replay that diverges from the journal,
//! (the payload changed between attempts, or another component forced under the job),
//! or a journal over its cap, ends the job `fatal` naming the call or the cap. `waits`:
//! contract 0.3's sleep, signals, fan-in and snooze without holding a slot. `busy`: a
//! busy API (429 or 503) answered with `snooze_when_busy` in each SDK.

mod busy;
mod crash;
pub(crate) mod receiver;
mod refusals;
mod waits;

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::worker_process::WorkerProcess;
use crate::support::{Sluice, show};
use receiver::Receiver;

/// The operator's opening for the receiver, and nothing else.
const LOOPBACK: &str = "127.0.0.1/32";

/// A worker that runs one job at a time, with a short lease reaped quickly (a killed
/// worker's job is back within about 3 s).
const WORKER: &[&str] = &[
    "--egress-allow-network",
    LOOPBACK,
    "--concurrency",
    "1",
    "--lease",
    "2s",
    "--reap-interval",
    "300ms",
    "--poll-interval",
    "200ms",
];

/// The flags of job type `steps`: allowed to call `receiver`, retried after `backoff`,
/// with `extra` flags.
fn type_args(receiver: &Receiver, backoff: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "--egress-allow-network",
        LOOPBACK,
        "--allow-http",
        receiver.origin.as_str(),
        "--max-attempts",
        "3",
        "--backoff-base",
        backoff,
        "--backoff-cap",
        backoff,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// Job type `steps` on `durable-steps` (see [`type_args`]).
fn steps_type(pool: &sqlx::PgPool, receiver: &Receiver, backoff: &str, extra: &[&str]) -> Sluice {
    let args = type_args(receiver, backoff, extra);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Sluice::with_type(pool, "steps", "durable-steps", &args)
}

fn enqueue_steps(sluice: &Sluice, payload: Value) -> String {
    crate::support::enqueue(sluice, "steps", payload)
}

/// Waits until `check` holds (polling every 20 ms), or panics after `limit` with `what`.
fn wait_until(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(
            Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until job `id` is finished (completed, dead or cancelled) and returns it.
fn finished(sluice: &Sluice, id: &str, worker: &WorkerProcess) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let job = show(sluice, id);
        if ["completed", "dead", "cancelled"].contains(&job["state"].as_str().unwrap_or("")) {
            return job;
        }
        assert!(
            Instant::now() < deadline,
            "job {id} not finished: {job}\nworker log:\n{}",
            worker.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn payload(receiver: &Receiver, steps: u64, pause_after: Value) -> Value {
    json!({ "urls": receiver.urls(steps), "pause_after": pause_after })
}
