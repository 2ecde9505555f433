//! `sluice jobs logs ID [--attempt N]`: what a job's attempts logged, as stored with each
//! attempt's end (`sluice.attempt_logs`), for the tenant of `--tenant`.
//!
//! Owns the rendering of stored logs for people (a header per attempt, the log, and
//! `… 12,345 bytes dropped` when the cap cut it) and for scripts (`--json`:
//! `sluice_wire::JobLogs`, each attempt as `GET /v1/jobs/{id}/attempts/{n}/logs` shows it). Must not
//! read logs of another tenant's job: every store call is scoped by the tenant.

use sluice_store::{AttemptLogRecord, Store};

use super::output::Printer;
use sluice_wire::{AttemptLogView, JobLogs};

pub async fn run(
    store: &Store,
    tenant: &str,
    printer: &Printer,
    id: i64,
    attempt: Option<i32>,
) -> anyhow::Result<()> {
    let records = store.attempt_logs(Some(tenant), id, attempt).await?;
    if records.is_empty() && store.get(Some(tenant), id).await?.is_none() {
        anyhow::bail!(
            "job {id} not found for tenant `{tenant}`; `sluice jobs list` shows its jobs"
        );
    }
    if let (Some(n), true) = (attempt, records.is_empty()) {
        anyhow::bail!("job {id} has no attempt {n}; `sluice jobs show {id}` lists its attempts");
    }
    // Without --attempt: only the attempts that logged something, oldest first.
    let shown: Vec<&AttemptLogRecord> = records
        .iter()
        .filter(|r| attempt.is_some() || r.has_log())
        .collect();
    if printer.is_json() {
        let logs = JobLogs {
            job_id: id,
            attempts: shown.iter().map(|r| AttemptLogView::new(id, r)).collect(),
        };
        printer.value(&logs, &[]);
        return Ok(());
    }
    if shown.is_empty() {
        println!("no attempt of job {id} logged anything");
        return Ok(());
    }
    for (i, record) in shown.iter().enumerate() {
        if i > 0 {
            println!();
        }
        println!("{}", header(record));
        if record.has_log() {
            print!("{}", record.text());
        } else {
            println!("(logged nothing)");
        }
    }
    Ok(())
}

/// `== attempt 2 · retry · started 2026-12-03 13:45:55.123 UTC ==`
fn header(record: &AttemptLogRecord) -> String {
    let outcome = record.outcome.map_or("running", |o| o.as_str());
    format!(
        "== attempt {} · {outcome} · started {} ==",
        record.attempt,
        record.started_at.format("%Y-%m-%d %H:%M:%S%.3f UTC")
    )
}
