//! `clock`: completes with the wall-clock time at which its `run` began, in
//! microseconds since the Unix epoch (decimal text). `sluice bench latency` compares it
//! with the time the enqueue committed, on the same machine's clock.

use std::time::{SystemTime, UNIX_EPOCH};

use sluice_guest::{Job, TaskResult};

fn run(_job: Job) -> TaskResult {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0);
    Ok(now.to_string().into_bytes())
}

sluice_guest::export_task!(run);
