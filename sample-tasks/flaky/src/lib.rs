//! `flaky`: payload `{"succeed_on": N}`; attempts before N fail with a retryable error,
//! attempt N (and later) completes with `ok on attempt N`. Each attempt logs one host
//! `log` line (`[INFO] attempt N of job ID`) and one line on stderr (failing) or stdout
//! (succeeding), so every attempt has a log of its own.

use sluice_guest::{Job, TaskError, TaskResult};

#[derive(serde::Deserialize)]
struct Args {
    succeed_on: u32,
}

fn run(job: Job) -> TaskResult {
    let args: Args = job.json()?;
    sluice_guest::log::info(format!("attempt {} of job {}", job.attempt, job.id));
    if job.attempt < args.succeed_on {
        let msg = format!(
            "attempt {} of {} failed on purpose",
            job.attempt, args.succeed_on
        );
        eprintln!("{msg}");
        return Err(TaskError::retry(msg));
    }
    println!("succeeding on attempt {}", job.attempt);
    Ok(format!("ok on attempt {}", job.attempt).into_bytes())
}

sluice_guest::export_task!(run);
