//! `sleep`: payload `{"ms": N}`; busy-waits N milliseconds on the monotonic clock (no host
//! sleep, so it burns fuel like real work), then completes with `slept N ms from B to E`:
//! B and E are the wall-clock times its `run` began and ended, in microseconds since the
//! Unix epoch (tests sweep them to count how many guests ran at once).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sluice_guest::{Job, TaskResult};

#[derive(serde::Deserialize)]
struct Args {
    ms: u64,
}

fn wall_micros() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0)
}

fn run(job: Job) -> TaskResult {
    let args: Args = job.json()?;
    let began = wall_micros();
    let deadline = Duration::from_millis(args.ms);
    let start = Instant::now();
    while start.elapsed() < deadline {
        std::hint::spin_loop();
    }
    let ended = wall_micros();
    Ok(format!("slept {} ms from {began} to {ended}", args.ms).into_bytes())
}

sluice_guest::export_task!(run);
