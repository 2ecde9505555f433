//! `sluice usage`: what the tenant's runs used (docs/usage.md) — runs, fuel, wall time,
//! peak memory, outbound requests and bytes, payload, output and log bytes — per tenant
//! and, with `--by`, per job type or hour. `--json` prints `sluice_wire::UsageView` (what
//! `GET /v1/usage` answers).

use chrono::Utc;
use sluice_store::Store;
use sluice_wire::{UsageView, UsageWindow};

use super::Global;
use super::output::{Printer, render_table};
use sluice_shared::units::format_size;

#[derive(Debug, clap::Args)]
pub struct UsageArgs {
    /// From when: an RFC 3339 time or a duration ago (`24h`, `7d`); its hour counts whole;
    /// at most 366 days back (an earlier one starts there).
    #[arg(long, default_value = "24h")]
    pub since: String,
    /// Until when (exclusive), the same forms; default now.
    #[arg(long)]
    pub until: Option<String>,
    /// One row per tenant and job type, or per tenant and hour (UTC).
    #[arg(long, value_parser = ["tenant", "type", "hour"])]
    pub by: Option<String>,
    /// Every tenant instead of `--tenant` (an operator's view).
    #[arg(long)]
    pub all_tenants: bool,
}

pub async fn run(
    store: &Store,
    global: &Global,
    printer: &Printer,
    args: UsageArgs,
) -> anyhow::Result<()> {
    let window = UsageWindow::parse(
        Some(&args.since),
        args.until.as_deref(),
        args.by.as_deref(),
        Utc::now(),
    )
    .map_err(anyhow::Error::msg)?;
    let tenant = (!args.all_tenants).then_some(global.tenant.as_str());
    let rows = store
        .usage(tenant, window.since, window.until, window.by)
        .await?;
    let view = UsageView::new(&window, rows);
    if printer.is_json() {
        printer.value(&view, &[]);
        return Ok(());
    }
    print!("{}", render(&view));
    Ok(())
}

/// The people's view: one row per group, sizes in units, wall time in seconds.
fn render(view: &UsageView) -> String {
    let mut headers = vec!["tenant"];
    match view.by.as_str() {
        "type" => headers.push("type"),
        "hour" => headers.push("hour (UTC)"),
        _ => {}
    }
    headers.extend([
        "runs",
        "fuel",
        "wall",
        "peak memory",
        "requests",
        "sent",
        "received",
        "payload",
        "output",
        "logs",
    ]);
    let size = |n: i64| format_size(n.max(0) as u64);
    let rows: Vec<Vec<String>> = view
        .rows
        .iter()
        .map(|r| {
            let mut row = vec![r.tenant.clone()];
            if let Some(t) = &r.job_type {
                row.push(t.clone());
            }
            if let Some(h) = r.hour {
                row.push(h.format("%Y-%m-%d %H:00").to_string());
            }
            row.extend([
                r.runs.to_string(),
                r.fuel.to_string(),
                format!("{:.1}s", r.wall_ms as f64 / 1000.0),
                size(r.peak_memory_bytes),
                r.http_requests.to_string(),
                size(r.http_bytes_out),
                size(r.http_bytes_in),
                size(r.payload_bytes),
                size(r.output_bytes),
                size(r.log_bytes),
            ]);
            row
        })
        .collect();
    let until = view.until.map_or("now".to_owned(), |u| {
        u.format("%Y-%m-%d %H:%M UTC").to_string()
    });
    let mut out = format!(
        "usage from {} until {until}\n",
        view.since.format("%Y-%m-%d %H:00 UTC")
    );
    if rows.is_empty() {
        out.push_str("no runs metered in this window\n");
    } else {
        out.push_str(&render_table(&headers, &rows));
    }
    out
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(clap::Parser)]
    struct Usage {
        #[command(flatten)]
        args: UsageArgs,
    }

    /// Without `--since` the window is the API's default one (`UsageWindow::new`).
    #[test]
    fn the_since_flags_default_is_the_apis() {
        let args = Usage::try_parse_from(["usage"]).unwrap().args;
        let now = Utc::now();
        let from_flags = UsageWindow::parse(Some(&args.since), None, None, now).unwrap();
        let api = UsageWindow::new(None, None, Default::default(), now);
        assert_eq!(from_flags.since, api.since);
    }
}
