//! `fatal`: always fails with a permanent error, so the job goes to `dead` on attempt 1.

use sluice_guest::{Job, TaskError, TaskResult};

fn run(job: Job) -> TaskResult {
    Err(TaskError::fatal(format!(
        "job {} fails permanently on purpose",
        job.id
    )))
}

sluice_guest::export_task!(run);
