//! `flaky`: payload `{"succeed_on": N}`; attempts before N fail with a retryable error,
//! attempt N (and later) completes with `ok on attempt N`.

use sluice_guest::{Job, TaskError, TaskResult};

#[derive(serde::Deserialize)]
struct Args {
    succeed_on: u32,
}

fn run(job: Job) -> TaskResult {
    let args: Args = job.json()?;
    if job.attempt < args.succeed_on {
        let msg = format!(
            "attempt {} of {} failed on purpose",
            job.attempt, args.succeed_on
        );
        return Err(TaskError::retry(msg));
    }
    Ok(format!("ok on attempt {}", job.attempt).into_bytes())
}

sluice_guest::export_task!(run);
