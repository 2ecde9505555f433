//! `durable-steps`: payload `{"urls": ["...", ...], "pause_after": {"2": 3000}}`; POSTs
//! `{"step": i}` to each URL in order (steps numbered from 1) and completes with the list
//! of response bodies (as text). `pause_after` (optional): after step `i`, busy-wait that
//! many milliseconds, reading the clock, so that a test can kill the worker in the
//! middle. A non-2xx answer or a network failure is retried.
//!
//! Run as a durable type (`sluice types set T --durable`), a retry after a crash replays
//! the steps already answered instead of posting them again (docs/durable.md).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use sluice_guest::serde_json::json;
use sluice_guest::{Job, TaskError, TaskResult, http};

#[derive(serde::Deserialize)]
struct Args {
    urls: Vec<String>,
    #[serde(default)]
    pause_after: BTreeMap<String, u64>,
}

fn run(job: Job) -> TaskResult {
    let args: Args = job.json()?;
    let mut bodies = Vec::new();
    for (i, url) in args.urls.iter().enumerate() {
        let step = i + 1;
        let response = http::post_json(url, &json!({ "step": step }))?;
        if !(200..=299).contains(&response.status) {
            return Err(TaskError::retry(format!(
                "step {step}: {url} answered {}",
                response.status
            )));
        }
        bodies.push(response.text());
        if let Some(&ms) = args.pause_after.get(&step.to_string()) {
            pause(Duration::from_millis(ms));
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

sluice_guest::export_task!(run);
