//! `echo`: completes with its payload unchanged.

use sluice_guest::{Job, TaskResult};

fn run(job: Job) -> TaskResult {
    Ok(job.payload)
}

sluice_guest::export_task!(run);
