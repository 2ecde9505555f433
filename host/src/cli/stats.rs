//! `sluice stats`: queue depth per state and job type, the oldest ready job's age,
//! running and dead counts, and lease expirations of the last hour. Prints what
//! [`Store::stats`] returns; `--json` prints it as `sluice_wire::StatsView` (what
//! `GET /v1/stats` answers).

use sluice_store::{Stats, Store};

use super::Global;
use super::output::{Printer, render_table};
use sluice_wire::StatsView;

#[derive(Debug, clap::Args)]
pub struct StatsArgs {
    /// Every tenant instead of `--tenant` (an operator's view).
    #[arg(long)]
    pub all_tenants: bool,
}

pub async fn run(
    store: &Store,
    global: &Global,
    printer: &Printer,
    args: StatsArgs,
) -> anyhow::Result<()> {
    let tenant = (!args.all_tenants).then_some(global.tenant.as_str());
    let stats = store.stats(tenant).await?;
    if printer.is_json() {
        printer.value(&StatsView::from(stats), &[]);
        return Ok(());
    }
    print!("{}", render(&stats));
    Ok(())
}

/// The people's view: a summary, then one row per job type.
fn render(stats: &Stats) -> String {
    let t = &stats.totals;
    let scope = stats
        .tenant
        .as_deref()
        .map_or("all tenants".to_owned(), |id| format!("tenant `{id}`"));
    let mut out = format!(
        "{scope}, as of {}\n\
         ready {}  scheduled {}  running {}  waiting {}  completed {}  dead {}  cancelled {}\n\
         oldest ready job waiting: {}\n\
         lease expirations in the last hour: {}\n\n",
        stats.as_of.format("%Y-%m-%d %H:%M:%S UTC"),
        t.ready,
        t.pending - t.ready,
        t.running,
        t.waiting,
        t.completed,
        t.dead,
        t.cancelled,
        age(stats.oldest_ready_age_seconds),
        stats.lease_expirations_last_hour,
    );
    let all = stats.tenant.is_none();
    let mut headers = vec![
        "type",
        "ready",
        "scheduled",
        "running",
        "waiting",
        "completed",
        "dead",
        "cancelled",
        "oldest ready",
        "expired leases (1h)",
    ];
    if all {
        headers.insert(0, "tenant");
    }
    let rows: Vec<Vec<String>> = stats
        .types
        .iter()
        .map(|ty| {
            let c = &ty.counts;
            let name = if ty.registered {
                ty.job_type.clone()
            } else {
                format!("{} (unregistered)", ty.job_type)
            };
            let mut row = vec![
                name,
                c.ready.to_string(),
                (c.pending - c.ready).to_string(),
                c.running.to_string(),
                c.waiting.to_string(),
                c.completed.to_string(),
                c.dead.to_string(),
                c.cancelled.to_string(),
                age(ty.oldest_ready_age_seconds),
                ty.lease_expirations_last_hour.to_string(),
            ];
            if all {
                row.insert(0, ty.tenant.clone());
            }
            row
        })
        .collect();
    out.push_str(&render_table(&headers, &rows));
    out
}

/// `-` when nothing is ready, else a rounded human duration (`3m 12s`).
fn age(seconds: Option<f64>) -> String {
    match seconds {
        None => "-".into(),
        Some(s) if s < 1.0 => format!("{:.0}ms", s * 1000.0),
        Some(s) => {
            humantime::format_duration(std::time::Duration::from_secs(s.round() as u64)).to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_like_durations() {
        assert_eq!(age(None), "-");
        assert_eq!(age(Some(0.25)), "250ms");
        assert_eq!(age(Some(192.4)), "3m 12s");
    }
}
