//! `sluice jobs journal ID`: a durable job's journal of host calls (`docs/durable.md`),
//! for the tenant of `--tenant`: one line per call (seq, kind, request, what the guest
//! got, the attempt that recorded it, `replayed` when a later attempt was answered from
//! it). `--json` prints `sluice_wire::JournalView`, as `GET /v1/jobs/{id}/journal` does.
//!
//! Must not read another tenant's journal: every store call is scoped by the tenant.

use sluice_store::Store;
use sluice_wire::JournalView;

use super::output::{Printer, render_table};

pub async fn run(store: &Store, tenant: &str, printer: &Printer, id: i64) -> anyhow::Result<()> {
    let records = store.journal(Some(tenant), id).await?;
    if records.is_empty() && store.get(Some(tenant), id).await?.is_none() {
        anyhow::bail!(
            "job {id} not found for tenant `{tenant}`; `sluice jobs list` shows its jobs"
        );
    }
    let view = JournalView::new(id, records);
    if printer.is_json() {
        printer.value(&view, &[]);
        return Ok(());
    }
    if view.entries.is_empty() {
        println!("job {id} journaled nothing (its type is not durable, or it has not run)");
        return Ok(());
    }
    let rows: Vec<Vec<String>> = view
        .entries
        .iter()
        .map(|e| {
            vec![
                e.seq.to_string(),
                e.kind.clone(),
                e.request.clone(),
                e.summary.clone(),
                e.attempt.to_string(),
                if e.replayed { "replayed" } else { "live" }.to_owned(),
            ]
        })
        .collect();
    let headers = ["seq", "kind", "request", "result", "attempt", "later"];
    print!("{}", render_table(&headers, &rows));
    Ok(())
}
