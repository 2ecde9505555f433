//! The overview page: the queue's measures for the session's tenant (reference 001 §7) —
//! jobs per state and per type, throughput over the last hour as a server-drawn chart,
//! the oldest ready job's age, dead letters, lease expiries and missed schedule slots.
//!
//! Owns: that page and its chart. Must not: compute measures the store already gives.

use axum::extract::State;
use axum::response::Response;
use maud::{Markup, html};
use sluice_store::MinuteCounts;

use super::errors::store_error;
use super::layout::{self, Nav};
use super::session::Viewer;
use super::views::{STATES, count, duration_text, state_badge};
use crate::app_state::AppState;

/// Minutes the throughput chart covers.
const CHART_MINUTES: u32 = 60;

pub async fn page(State(state): State<AppState>, viewer: Viewer) -> Result<Response, Response> {
    let store = state.store();
    let tenant = viewer.tenant();
    let stats = store
        .stats(Some(tenant))
        .await
        .map_err(|e| store_error(&e))?;
    let series = store
        .throughput(tenant, CHART_MINUTES)
        .await
        .map_err(|e| store_error(&e))?;
    let schedules = store
        .list_schedules(Some(tenant))
        .await
        .map_err(|e| store_error(&e))?;
    let missed: i64 = schedules.iter().map(|s| s.skipped_count).sum();
    let completed_hour: i64 = series.iter().map(|m| m.completed).sum();
    let failed_hour: i64 = series.iter().map(|m| m.failed).sum();
    let totals = stats.totals;
    let body = html! {
        section.cards {
            div.card { h2 { "Ready now" } p.big #ready-count { (count(totals.ready)) }
                p.muted { "of " (count(totals.pending)) " pending" } }
            div.card { h2 { "Running" } p.big #running-count { (count(totals.running)) } }
            div.card { h2 { "Oldest ready job" } p.big #oldest-ready {
                (stats.oldest_ready_age_seconds.map_or_else(|| "none".to_owned(), duration_text)) } }
            div.card { h2 { "Dead letters" } p.big #dead-count {
                a href="/ui/jobs?state=dead" { (count(totals.dead)) } } }
            div.card { h2 { "Lease expiries (1 h)" } p.big #lease-expiries {
                (count(stats.lease_expirations_last_hour)) } }
            div.card { h2 { "Missed schedule slots" } p.big #missed-slots {
                a href="/ui/schedules" { (count(missed)) } } }
        }
        h2 { "Jobs per state" }
        table #state-counts {
            tr { @for state in STATES { th { (state_badge(state)) } } }
            tr { @for state in STATES {
                td data-state=(state.as_str()) {
                    a href={ "/ui/jobs?state=" (state.as_str()) } { (count(totals.get(state))) }
                }
            } }
        }
        h2 { "Throughput, last hour" }
        p.muted {
            (count(completed_hour)) " completed, " (count(failed_hour)) " failed attempts; one bar per minute, database time."
        }
        (chart(&series))
        h2 { "Per job type" }
        @if stats.types.is_empty() {
            p.muted { "No jobs yet." }
        } @else {
            table #types {
                thead { tr {
                    th { "Type" }
                    @for state in STATES { th { (state.as_str()) } }
                    th { "Oldest ready" } th { "Lease expiries (1 h)" }
                } }
                tbody { @for t in &stats.types {
                    tr data-type=(t.job_type) {
                        td { a href={ "/ui/jobs?type=" (super::forms::urlencode(&t.job_type)) } { (t.job_type) }
                            @if !t.registered { " " span.badge { "unregistered" } } }
                        @for state in STATES { td.num { (count(t.counts.get(state))) } }
                        td { (t.oldest_ready_age_seconds.map_or_else(|| "—".to_owned(), duration_text)) }
                        td.num { (count(t.lease_expirations_last_hour)) }
                    }
                } }
            }
        }
    };
    Ok(layout::page(&viewer, Nav::Overview, "Overview", true, body))
}

/// Completed jobs (green) and failed attempts (red) per minute, stacked bars, oldest on
/// the left; drawn on the server as SVG so it needs no script.
fn chart(series: &[MinuteCounts]) -> Markup {
    const W: f64 = 720.0;
    const H: f64 = 140.0;
    let peak = series
        .iter()
        .map(|m| m.completed + m.failed)
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let slot = W / series.len().max(1) as f64;
    let bar = (slot - 2.0).max(1.0);
    let y = |value: i64| value as f64 / peak * H;
    html! {
        svg #throughput class="chart" viewBox={ "0 0 " (W) " " (H + 20.0) } width="100%" role="img"
            aria-label="completed and failed per minute over the last hour" {
            line x1="0" y1=(H) x2=(W) y2=(H) stroke="#999" stroke-width="1" {}
            @for (i, minute) in series.iter().enumerate() {
                @let x = i as f64 * slot + 1.0;
                @let ok = y(minute.completed);
                @let bad = y(minute.failed);
                g {
                    title { (minute.minute.format("%H:%M")) ": " (minute.completed) " completed, " (minute.failed) " failed" }
                    @if minute.completed > 0 {
                        rect.completed x=(x) y=(H - ok) width=(bar) height=(ok) fill="#2e8540" {}
                    }
                    @if minute.failed > 0 {
                        rect.failed x=(x) y=(H - ok - bad) width=(bar) height=(bad) fill="#c0392b" {}
                    }
                }
            }
            text x="0" y=(H + 15.0) font-size="11" fill="#666" {
                (series.first().map(|m| m.minute.format("%H:%M").to_string()).unwrap_or_default())
            }
            text x=(W) y=(H + 15.0) font-size="11" fill="#666" text-anchor="end" { "now" }
            text x="4" y="12" font-size="11" fill="#666" { "peak " (peak as i64) "/min" }
        }
    }
}
