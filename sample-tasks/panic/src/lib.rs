//! `panic` (hostile): panics. The message goes to stderr (the attempt's log) and the guest
//! aborts; expected outcome: a trap, retried like any other failure.

use sluice_guest::{Job, TaskResult};

fn run(job: Job) -> TaskResult {
    panic!(
        "sample task panicked on purpose (job {}, attempt {})",
        job.id, job.attempt
    );
}

sluice_guest::export_task!(run);
