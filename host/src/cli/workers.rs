//! `sluice workers list`: the worker registry (every `sluice worker` and `sluice
//! scheduler` that ran against this database, with its state). Printing only; what
//! running, lost and stopped mean is the store's (read against the database clock).
//! `--json` prints `sluice_wire::WorkerView`s (what `GET /v1/workers` answers).

use clap::Subcommand;
use sluice_store::{Store, WorkerRecord};

use super::output::Printer;
use sluice_wire::WorkerView;

#[derive(Debug, Subcommand)]
pub enum WorkersCommand {
    /// List registered processes: running first, then lost (no heartbeat for longer
    /// than their lease), then stopped.
    List,
}

pub async fn run(store: &Store, printer: &Printer, command: WorkersCommand) -> anyhow::Result<()> {
    match command {
        WorkersCommand::List => {
            let workers = store.list_workers().await?;
            printer.table(
                workers,
                &[
                    "id",
                    "kind",
                    "state",
                    "host",
                    "pid",
                    "version",
                    "contracts",
                    "concurrency",
                    "started",
                    "last heartbeat",
                ],
                row,
                WorkerView::from,
            );
        }
    }
    Ok(())
}

fn row(w: &WorkerRecord) -> Vec<String> {
    let time =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    vec![
        w.id.clone(),
        w.kind.as_str().into(),
        w.state.as_str().into(),
        w.hostname.clone(),
        w.pid.to_string(),
        w.version.clone(),
        if w.contracts.is_empty() {
            "-".into()
        } else {
            w.contracts.join(",")
        },
        w.concurrency.map_or_else(|| "-".into(), |c| c.to_string()),
        time(w.started_at),
        time(w.last_heartbeat),
    ]
}
