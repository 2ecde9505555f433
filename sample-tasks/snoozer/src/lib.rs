//! `snoozer` (contract 0.3): payload `{"snoozes": K, "delay_ms": D}` (both optional:
//! K = 1, D = 0). Logs `snoozer: attempt A, K snoozes of D ms` (a snooze spends no
//! attempt, so A stays the same across runs), calls `flow::snooze(D ms)` K times in a
//! row, then completes with `done`.
//!
//! It needs no state of its own, and so tests both kinds of type:
//! - **durable** (`sluice types set T --durable`): each snooze suspends the run; the next
//!   run replays the snoozes already made (each returns) and makes the next one live, so
//!   the job completes after K + 1 runs, K snoozes counted by the host;
//! - **not durable**: a snooze never returns and each run starts `run` over, so the
//!   first snooze repeats forever: the job snoozes until one beyond the type's
//!   `--max-snoozes`, which fails the attempt (retryable; an attempt spent), until the
//!   job is `dead`. K = 0 completes at once in both.

use std::time::Duration;

use sluice_guest::v0_3::{flow, log};
use sluice_guest::{Job, TaskResult};

#[derive(serde::Deserialize)]
#[serde(default)]
struct Args {
    snoozes: u32,
    delay_ms: u64,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            snoozes: 1,
            delay_ms: 0,
        }
    }
}

fn run(job: Job) -> TaskResult {
    let args: Args = job.json_or_default()?;
    log::info(format!(
        "snoozer: attempt {}, {} snoozes of {} ms",
        job.attempt, args.snoozes, args.delay_ms
    ));
    for _ in 0..args.snoozes {
        flow::snooze(Duration::from_millis(args.delay_ms));
    }
    Ok(format!(
        "done after {} snoozes (attempt {})",
        args.snoozes, job.attempt
    )
    .into_bytes())
}

sluice_guest::export_task_v0_3!(run);
