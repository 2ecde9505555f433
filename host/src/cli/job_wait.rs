//! `sluice jobs wait ID [--timeout]`: waits for a job to finish through the store's
//! [`FinishWaits`] (the NOTIFY of its finish, as `GET /v1/jobs/{id}?wait=` does) and shows
//! it; the exit code says how it ended. `--json` prints the job as `GET /v1/jobs/{id}`.
//!
//! Must not: poll on a timer of its own (the store's waits fall back to that when LISTEN
//! is not available).

use std::process::ExitCode;
use std::time::Duration;

use sluice_store::{FinishWaits, JobState, Store};
use sluice_wire::JobView;

use super::Global;
use super::jobs::{not_found, result_text};
use super::output::Printer;

/// Exit code when `--timeout` passed before the job finished (as `timeout(1)`).
pub const TIMED_OUT: u8 = 124;

/// The exit code for a job as the wait left it.
pub fn exit_code(state: JobState) -> u8 {
    match state {
        JobState::Completed => 0,
        JobState::Dead => 3,
        JobState::Cancelled => 4,
        JobState::Pending | JobState::Running | JobState::Waiting => TIMED_OUT,
    }
}

pub async fn run(
    store: &Store,
    global: &Global,
    printer: &Printer,
    id: i64,
    timeout: Option<Duration>,
) -> anyhow::Result<ExitCode> {
    let waits = FinishWaits::new(store.clone());
    let job = waits
        .wait(Some(&global.tenant), id, timeout.unwrap_or(Duration::MAX))
        .await?
        .ok_or_else(|| not_found(id, &global.tenant))?;
    let code = exit_code(job.state);
    let result = if job.state.is_terminal() {
        result_text(job.state, job.output.as_deref(), job.last_error.as_deref())
    } else {
        format!("not finished after {}", waited_text(timeout))
    };
    let fields = [
        ("job", job.id.to_string()),
        ("type", job.job_type.clone()),
        ("state", job.state.to_string()),
        ("attempts", format!("{}/{}", job.attempt, job.max_attempts)),
        ("result", result),
    ];
    printer.value(&JobView::from(job), &fields);
    Ok(ExitCode::from(code))
}

fn waited_text(timeout: Option<Duration>) -> String {
    timeout.map_or_else(|| "ever".into(), |t| format!("{t:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_end_has_its_exit_code() {
        let codes: Vec<u8> = JobState::ALL.into_iter().map(exit_code).collect();
        assert_eq!(codes, [TIMED_OUT, TIMED_OUT, TIMED_OUT, 0, 3, 4]);
    }
}
