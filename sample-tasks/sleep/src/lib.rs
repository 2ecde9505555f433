//! `sleep`: payload `{"ms": N}`; busy-waits N milliseconds on the monotonic clock (no host
//! sleep, so it burns fuel like real work), then completes with `slept N ms`.

use std::time::{Duration, Instant};

use sluice_guest::{Job, TaskResult};

#[derive(serde::Deserialize)]
struct Args {
    ms: u64,
}

fn run(job: Job) -> TaskResult {
    let args: Args = job.json()?;
    let deadline = Duration::from_millis(args.ms);
    let start = Instant::now();
    while start.elapsed() < deadline {
        std::hint::spin_loop();
    }
    Ok(format!("slept {} ms", args.ms).into_bytes())
}

sluice_guest::export_task!(run);
