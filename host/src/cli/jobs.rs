//! `sluice jobs list|show|wait|attempts|logs|journal|cancel|retry`: inspecting and steering
//! jobs of one tenant (`logs` renders in `job_logs.rs`, `journal` in `journal.rs`, `wait`
//! in `job_wait.rs`). `--json` prints the views of `sluice_wire`:
//! `show` the object of `GET /v1/jobs/{id}`, `attempts` the array of
//! `GET /v1/jobs/{id}/attempts`.

use clap::Subcommand;
use sluice_store::{AttemptRecord, CancelResult, JobFilter, JobState, JobSummary, Store};

use super::Global;
use super::output::{Printer, clip, render_table};
use sluice_wire::{AttemptView, JobListItem, JobView, SignalSent};

#[derive(Debug, Subcommand)]
pub enum JobsCommand {
    /// List jobs, newest first.
    List {
        #[arg(long, value_enum)]
        state: Option<StateArg>,
        #[arg(long = "type")]
        job_type: Option<String>,
        /// Only the follow-up jobs of this job (those its successful attempt enqueued).
        #[arg(long)]
        parent: Option<i64>,
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// Continue after this job id (the previous page's last id).
        #[arg(long)]
        after: Option<i64>,
    },
    /// Show a job with every attempt, its parent and its follow-up jobs (`--json`: the job
    /// as `GET /v1/jobs/{id}` shows it; `jobs attempts` prints the attempts).
    Show { id: i64 },
    /// Wait until a job is finished (completed, dead or cancelled), woken by its finish
    /// rather than by polling, and show it. Exit code: 0 completed, 3 dead, 4 cancelled,
    /// 124 when `--timeout` passed first (the job is shown as it is then).
    Wait {
        id: i64,
        /// Give up after this long (`30s`, `5m`, `2h`); default: wait as long as it takes.
        #[arg(long, value_parser = sluice_shared::units::parse_duration)]
        timeout: Option<std::time::Duration>,
    },
    /// Every attempt of a job, oldest first: worker, start, duration, outcome, fuel, error.
    Attempts { id: i64 },
    /// Print what the job's attempts logged (host `log` lines, stdout, stderr), oldest
    /// first: every attempt that logged something, or only attempt `--attempt N`.
    Logs {
        id: i64,
        /// Only this attempt (numbered from 1, as `jobs show` lists them).
        #[arg(long, value_parser = clap::value_parser!(i32).range(1..))]
        attempt: Option<i32>,
    },
    /// Print a durable job's journal: each host call its guest observed (clock, random,
    /// HTTP, secret, enqueue), in order, and whether a later attempt replayed it.
    Journal { id: i64 },
    /// Cancel a pending or waiting job, or interrupt a running one.
    Cancel { id: i64 },
    /// Send the signal NAME to a job (a durable job awaiting it wakes; otherwise the
    /// signal is kept until the job awaits it: docs/durable.md).
    Signal {
        id: i64,
        /// 1 to 128 characters.
        name: String,
        /// JSON the await returns (absent: the await returns `null`).
        #[arg(long)]
        payload: Option<String>,
    },
    /// Send a dead or cancelled job back to the queue with fresh attempts; with
    /// `--all-dead` (or `--state dead`), every dead job of the tenant (optionally of one
    /// `--type`).
    Retry {
        #[arg(
            required_unless_present_any = ["all_dead", "state"],
            conflicts_with_all = ["all_dead", "state"]
        )]
        id: Option<i64>,
        /// Retry the whole dead letter instead of one job.
        #[arg(long)]
        all_dead: bool,
        /// The same as --all-dead: `--state dead` (the only state retried in bulk).
        #[arg(long, value_parser = ["dead"], conflicts_with = "all_dead")]
        state: Option<String>,
        /// With --all-dead / --state dead: only jobs of this type.
        #[arg(long = "type", conflicts_with = "id")]
        job_type: Option<String>,
    },
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum StateArg {
    Pending,
    Running,
    Waiting,
    Completed,
    Dead,
    Cancelled,
}

impl From<StateArg> for JobState {
    fn from(state: StateArg) -> Self {
        match state {
            StateArg::Pending => JobState::Pending,
            StateArg::Running => JobState::Running,
            StateArg::Waiting => JobState::Waiting,
            StateArg::Completed => JobState::Completed,
            StateArg::Dead => JobState::Dead,
            StateArg::Cancelled => JobState::Cancelled,
        }
    }
}

pub async fn run(
    store: &Store,
    global: &Global,
    printer: &Printer,
    command: JobsCommand,
) -> anyhow::Result<()> {
    let tenant = Some(global.tenant.as_str());
    match command {
        JobsCommand::List {
            state,
            job_type,
            parent,
            limit,
            after,
        } => {
            let filter = JobFilter {
                tenant: tenant.map(str::to_owned),
                state: state.map(JobState::from),
                job_type,
                parent,
                after,
                limit,
            };
            let jobs = store.list(&filter).await?;
            printer.table(
                jobs,
                &["id", "type", "state", "attempts", "last error / output"],
                job_row,
                JobListItem::from,
            );
        }
        JobsCommand::Show { id } => {
            let job = store
                .get(tenant, id)
                .await?
                .ok_or_else(|| not_found(id, &global.tenant))?;
            if printer.is_json() {
                printer.value(&JobView::from(job), &[]);
                return Ok(());
            }
            let attempts = store.attempts(tenant, id).await?;
            let result = result_text(job.state, job.output.as_deref(), job.last_error.as_deref());
            let mut fields = vec![
                ("job", job.id.to_string()),
                ("type", job.job_type.clone()),
                ("state", job.state.to_string()),
                ("attempts", format!("{}/{}", job.attempt, job.max_attempts)),
                ("priority", job.priority.to_string()),
                ("run at", job.run_at.to_rfc3339()),
                ("result", result),
            ];
            if let Some(key) = &job.concurrency_key {
                fields.push(("concurrency key", key.clone()));
            }
            if let Some(held) = &job.held {
                fields.push(("held", held.to_string()));
            }
            if let Some(waits) = sluice_wire::jobs::waiting_text(&job) {
                fields.push(("waiting for", waits));
            }
            if let Some(parent) = job.parent_id {
                fields.push(("parent", parent.to_string()));
            }
            if job.children_count > 0 {
                fields.push((
                    "children",
                    children_text(job.id, &job.children, job.children_count),
                ));
            }
            printer.value(&JobView::from(job), &fields);
            let rows: Vec<Vec<String>> = attempts.iter().map(attempt_row).collect();
            println!();
            print!("{}", render_table(&ATTEMPT_HEADERS, &rows));
        }
        JobsCommand::Wait { .. } => unreachable!("cli::run hands `jobs wait` to job_wait"),
        JobsCommand::Attempts { id } => {
            let attempts = store.attempts(tenant, id).await?;
            if attempts.is_empty() && store.get(tenant, id).await?.is_none() {
                return Err(not_found(id, &global.tenant));
            }
            printer.table(attempts, &ATTEMPT_HEADERS, attempt_row, AttemptView::from);
        }
        JobsCommand::Logs { id, attempt } => {
            super::job_logs::run(store, &global.tenant, printer, id, attempt).await?;
        }
        JobsCommand::Journal { id } => {
            super::journal::run(store, &global.tenant, printer, id).await?;
        }
        JobsCommand::Cancel { id } => match store.cancel(tenant, id).await? {
            CancelResult::Cancelled => printer.message(&format!("job {id} cancelled")),
            CancelResult::CancelRequested => printer.message(&format!(
                "job {id} is running; its worker was told to stop it"
            )),
        },
        JobsCommand::Signal { id, name, payload } => {
            let payload = payload
                .map(|text| serde_json::from_str::<serde_json::Value>(&text))
                .transpose()
                .map_err(|e| anyhow::anyhow!("--payload is not valid JSON: {e}"))?;
            let woke = store
                .send_signal(tenant, id, &name, payload.as_ref())
                .await?;
            let what = if woke {
                "it woke the job"
            } else {
                "kept until the job awaits it"
            };
            let sent = SignalSent {
                job_id: id,
                name: name.clone(),
                woke,
            };
            printer.value(
                &sent,
                &[("signal", format!("`{name}` sent to job {id}: {what}"))],
            );
        }
        JobsCommand::Retry { id: Some(id), .. } => {
            store.retry(tenant, id).await?;
            printer.message(&format!("job {id} is pending again with fresh attempts"));
        }
        JobsCommand::Retry {
            id: None, job_type, ..
        } => {
            let count = store.retry_dead(tenant, job_type.as_deref()).await?;
            printer.message(&format!(
                "dead jobs retried: {count} (pending again with fresh attempts)"
            ));
        }
    }
    Ok(())
}

const ATTEMPT_HEADERS: [&str; 7] = [
    "attempt", "worker", "started", "took", "outcome", "fuel", "error",
];

/// One table row for an attempt.
fn attempt_row(a: &AttemptRecord) -> Vec<String> {
    vec![
        a.attempt.to_string(),
        a.worker.clone(),
        a.started_at.format("%H:%M:%S%.3f").to_string(),
        a.finished_at
            .map(|f| format!("{} ms", (f - a.started_at).num_milliseconds()))
            .unwrap_or_default(),
        a.outcome.map_or("running", |o| o.as_str()).to_owned(),
        a.fuel_used.map(|f| f.to_string()).unwrap_or_default(),
        clip(a.error.as_deref().unwrap_or(""), 60),
    ]
}

pub(super) fn not_found(id: i64, tenant: &str) -> anyhow::Error {
    anyhow::anyhow!("job {id} not found for tenant `{tenant}`; `sluice jobs list` shows its jobs")
}

/// A job's follow-up jobs, for people: their ids, and how to list them all when there
/// are more than the record carries.
fn children_text(id: i64, shown: &[i64], count: i64) -> String {
    let ids: Vec<String> = shown.iter().map(i64::to_string).collect();
    if count as usize > shown.len() {
        format!(
            "{count}: {} … (all: sluice jobs list --parent {id})",
            ids.join(", ")
        )
    } else {
        format!("{count}: {}", ids.join(", "))
    }
}

/// What a job produced, for people: its output (completed) or its last error.
pub(super) fn result_text(
    state: JobState,
    output: Option<&[u8]>,
    last_error: Option<&str>,
) -> String {
    match (output, last_error) {
        (Some(output), _) if state == JobState::Completed => {
            format!("output: {}", String::from_utf8_lossy(output))
        }
        (_, Some(error)) => format!("error: {error}"),
        _ => String::new(),
    }
}

/// One table row for a job: id, type, state, attempts, and its output or last error.
pub fn job_row(job: &JobSummary) -> Vec<String> {
    vec![
        job.id.to_string(),
        job.job_type.clone(),
        job.state.to_string(),
        format!("{}/{}", job.attempt, job.max_attempts),
        clip(
            &result_text(
                job.state,
                job.output_head.as_deref(),
                job.last_error.as_deref(),
            ),
            70,
        ),
    ]
}
