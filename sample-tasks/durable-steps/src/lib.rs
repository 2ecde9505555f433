//! `durable-steps` (contract 0.3): payload `{"urls": ["...", ...], "pause_after": {"2":
//! 3000}, "sleep_after": {"1": 5000}, "signal_before": {"3": "approve"}}`; POSTs
//! `{"step": i}` to each URL in order (steps numbered from 1) and completes with the JSON
//! list of response bodies (as text). Every field but `urls` is optional, keyed by step:
//! - `pause_after`: after step `i`, busy-wait that many milliseconds, reading the clock,
//!   so that a test can kill the worker in the middle;
//! - `sleep_after`: after step `i` (and its pause), `durable::sleep` that many
//!   milliseconds (a long one suspends a durable run; not durable, it sleeps in place);
//! - `signal_before`: before step `i`, `durable::await_signal(name)` with no timeout, and
//!   send `{"step": i, "signal": <the signal's JSON payload>}` for that step instead. Not
//!   durable, the wait is refused: `fatal("not-durable: …")`;
//! - `snooze_when_busy_ms` (not keyed by step): a 429 or 503 answer snoozes the job
//!   (`flow::snooze_when_busy`: for its `Retry-After`, or this many milliseconds without
//!   one, at most an hour) and the step is sent again after it.
//!
//! Any other non-2xx answer, or a network failure, is retried. Run as a durable type
//! (`sluice types set T --durable`), a retry after a crash, or the run after a wake-up,
//! replays the steps already answered instead of posting them again (docs/durable.md).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use sluice_guest::serde_json::{Value, json};
use sluice_guest::v0_3::{durable, flow};
use sluice_guest::{Job, TaskError, TaskResult, http};

#[derive(serde::Deserialize)]
struct Args {
    urls: Vec<String>,
    #[serde(default)]
    pause_after: BTreeMap<String, u64>,
    #[serde(default)]
    sleep_after: BTreeMap<String, u64>,
    #[serde(default)]
    signal_before: BTreeMap<String, String>,
    snooze_when_busy_ms: Option<u64>,
}

fn run(job: Job) -> TaskResult {
    let args: Args = job.json()?;
    let mut bodies = Vec::new();
    for (i, url) in args.urls.iter().enumerate() {
        let step = i + 1;
        let key = step.to_string();
        let mut body = json!({ "step": step });
        if let Some(name) = args.signal_before.get(&key) {
            let signal: Option<Value> = durable::await_signal_json(name, None)?;
            // No timeout: `None` cannot come back, but `null` is what a bare signal says.
            body["signal"] = signal.unwrap_or(Value::Null);
        }
        let response = loop {
            let response = http::post_json(url, &body)?;
            match args.snooze_when_busy_ms {
                Some(ms) if flow::snooze_when_busy(&response, Duration::from_millis(ms)) => {}
                _ => break response,
            }
        };
        if !(200..=299).contains(&response.status) {
            return Err(TaskError::retry(format!(
                "step {step}: {url} answered {}",
                response.status
            )));
        }
        bodies.push(response.text());
        if let Some(&ms) = args.pause_after.get(&key) {
            pause(Duration::from_millis(ms));
        }
        if let Some(&ms) = args.sleep_after.get(&key) {
            durable::sleep(Duration::from_millis(ms));
        }
    }
    sluice_guest::json_output(&bodies)
}

/// Waits `length` reading the clock (every 10 ms: a few hundred reads, not millions).
fn pause(length: Duration) {
    let start = Instant::now();
    while start.elapsed() < length {
        std::thread::sleep(Duration::from_millis(10));
    }
}

sluice_guest::export_task_v0_3!(run);
