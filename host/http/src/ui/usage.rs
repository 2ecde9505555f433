//! The usage page (docs/usage.md): what the session's tenant's runs used over the last
//! 24 hours or 7 days — runs and fuel per hour as a server-drawn chart, and per job type
//! as a table — with its daily quotas and how much of each is used today.
//!
//! Owns: that page and its chart. Must not: meter or sum anything itself (the store's
//! report does), or change a quota (the operator's, on the CLI).

use axum::extract::{RawQuery, State};
use axum::response::Response;
use chrono::{Duration, Utc};
use maud::{Markup, html};
use sluice_store::{UsageGrouping, UsageRow};

use super::errors::store_error;
use super::layout::{self, Nav};
use super::session::Viewer;
use super::views::{bytes_text, count, opt};
use crate::app_state::AppState;

pub async fn page(
    State(state): State<AppState>,
    viewer: Viewer,
    RawQuery(query): RawQuery,
) -> Result<Response, Response> {
    let store = state.store();
    let tenant = viewer.tenant();
    // `?days=7` for a week; anything else is the default day.
    let week = query.is_some_and(|q| q.split('&').any(|pair| pair == "days=7"));
    let days = if week { 7 } else { 1 };
    let since = Utc::now() - Duration::days(days);
    let hours = store
        .usage(Some(tenant), since, None, UsageGrouping::Hour)
        .await
        .map_err(|e| store_error(&e))?;
    let types = store
        .usage(Some(tenant), since, None, UsageGrouping::Type)
        .await
        .map_err(|e| store_error(&e))?;
    let limits = store
        .get_tenant(tenant)
        .await
        .map_err(|e| store_error(&e))?
        .map(|t| t.limits);
    let runs: i64 = hours.iter().map(|h| h.counts.runs).sum();
    let fuel: i64 = hours.iter().map(|h| h.counts.fuel).sum();
    let body = html! {
        p {
            a href="/ui/usage" class=[(days == 1).then_some("current")] { "Last 24 hours" }
            " · "
            a href="/ui/usage?days=7" class=[(days == 7).then_some("current")] { "Last 7 days" }
        }
        section.cards {
            div.card { h2 { "Runs" } p.big #usage-runs { (count(runs)) } }
            div.card { h2 { "Fuel" } p.big #usage-fuel { (count(fuel)) } }
        }
        h2 { "Runs per hour" }
        p.muted { "One bar per hour (UTC) with runs; hover a bar for its fuel and outbound bytes." }
        (chart(&hours))
        h2 { "Per job type" }
        @if types.is_empty() {
            p.muted #usage-none { "No runs metered in this window." }
        } @else {
            table #usage-types {
                thead { tr {
                    th { "Type" } th { "Runs" } th { "Fuel" } th { "Wall time" } th { "Peak memory" }
                    th { "Requests" } th { "Sent" } th { "Received" } th { "Output" } th { "Logs" }
                } }
                tbody { @for t in &types {
                    @let c = &t.counts;
                    tr data-type=(t.job_type.as_deref().unwrap_or_default()) {
                        td { (t.job_type.as_deref().unwrap_or_default()) }
                        td.num { (count(c.runs)) } td.num { (count(c.fuel)) }
                        td.num { (format!("{:.1} s", c.wall_ms as f64 / 1000.0)) }
                        td.num { (bytes_text(c.peak_memory_bytes)) }
                        td.num { (count(c.http_requests)) }
                        td.num { (bytes_text(c.http_bytes_out)) } td.num { (bytes_text(c.http_bytes_in)) }
                        td.num { (bytes_text(c.output_bytes)) } td.num { (bytes_text(c.log_bytes)) }
                    }
                } }
            }
        }
        h2 { "Daily quotas" }
        @if let Some(l) = limits {
            table #usage-quotas {
                tr { th { "Attempts per day" } td { (opt(l.max_attempts_per_day.map(count))) } }
                tr { th { "Fuel per day" } td { (opt(l.max_fuel_per_day.map(count))) } }
                tr { th { "Egress bytes per day" } td { (opt(l.max_egress_bytes_per_day.map(bytes_text))) } }
            }
            p.muted { "Past a quota the tenant's jobs stay pending, no attempt spent, until midnight UTC or a higher quota." }
        }
    };
    Ok(layout::page(&viewer, Nav::Usage, "Usage", false, body))
}

/// Runs per hour, oldest on the left, as SVG bars drawn on the server (no script).
fn chart(hours: &[UsageRow]) -> Markup {
    const W: f64 = 720.0;
    const H: f64 = 140.0;
    let peak = hours
        .iter()
        .map(|h| h.counts.runs)
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let slot = W / hours.len().max(1) as f64;
    let bar = (slot - 2.0).clamp(1.0, 40.0);
    html! {
        svg #usage-chart class="chart" viewBox={ "0 0 " (W) " " (H + 20.0) } width="100%" role="img"
            aria-label="runs per hour" {
            line x1="0" y1=(H) x2=(W) y2=(H) stroke="#999" stroke-width="1" {}
            @for (i, hour) in hours.iter().enumerate() {
                @let c = &hour.counts;
                @let height = c.runs as f64 / peak * H;
                @let label = hour.hour.map(|h| h.format("%m-%d %H:00").to_string()).unwrap_or_default();
                g {
                    title { (label) " UTC: " (c.runs) " runs, " (c.fuel) " fuel, "
                        (bytes_text(c.http_bytes_out + c.http_bytes_in)) " outbound" }
                    rect.runs x=(i as f64 * slot + 1.0) y=(H - height) width=(bar) height=(height) fill="#2e6da4" {}
                }
            }
            text x="4" y="12" font-size="11" fill="#666" { "peak " (peak as i64) " runs/hour" }
        }
    }
}
