//! The schedules page: each cron schedule's expression, time zone, next slots, last
//! fired slot, fired and missed counts, last error; pause, resume and run now.
//!
//! Owns: that page and its three actions. Must not: fire slots itself ("run now"
//! enqueues one job through the store and leaves the slot bookkeeping alone).

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use sluice_store::{ScheduleRecord, next_slot_after, parse_cron, parse_tz};

use super::errors::{error_page, store_error};
use super::forms::{FormData, query_string};
use super::layout::{self, Nav};
use super::session::Viewer;
use super::views::{count, csrf_field, when, when_opt};
use crate::app_state::AppState;

/// Upcoming slots shown per schedule.
const NEXT_SLOTS: usize = 3;

pub async fn page(
    State(state): State<AppState>,
    viewer: Viewer,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
) -> Result<Response, Response> {
    let schedules = state
        .store()
        .list_schedules(Some(viewer.tenant()))
        .await
        .map_err(|e| store_error(&e))?;
    let form = FormData::parse(&Bytes::from(query.unwrap_or_default()));
    let body = html! {
        @if let Some(done) = form.get("done") { p.notice #schedule-done { (done) } }
        @if schedules.is_empty() {
            p.muted { "No schedule yet: " code { "sluice schedules create NAME --cron '*/5 * * * *' --type TYPE" } }
        } @else {
            table #schedules {
                thead { tr { th { "Name" } th { "Cron" } th { "Type" } th { "Next slots" } th { "Last fired" }
                    th { "Fired" } th { "Missed" } th { "Last error" } th { "" } } }
                tbody { @for s in &schedules { (row(&viewer, s)) } }
            }
        }
    };
    Ok(layout::page(
        &viewer,
        Nav::Schedules,
        "Schedules",
        true,
        body,
    ))
}

/// The next slots after the stored next slot (which is the first), computed from the
/// expression in the schedule's time zone.
fn next_slots(s: &ScheduleRecord) -> Vec<chrono::DateTime<chrono::Utc>> {
    let (Some(first), Ok(cron), Ok(tz)) = (s.next_slot, parse_cron(&s.cron), parse_tz(&s.tz))
    else {
        return s.next_slot.into_iter().collect();
    };
    let mut slots = vec![first];
    while slots.len() < NEXT_SLOTS {
        match next_slot_after(&cron, tz, *slots.last().expect("non-empty")) {
            Some(next) => slots.push(next),
            None => break,
        }
    }
    slots
}

fn row(viewer: &Viewer, s: &ScheduleRecord) -> Markup {
    let name = super::forms::urlencode(&s.name);
    html! {
        tr data-schedule=(s.name) {
            td { strong { (s.name) } @if s.paused { " " span.badge.paused { "paused" } } }
            td { code { (s.cron) } br; span.muted { (s.tz) } }
            td { a href={ "/ui/jobs?type=" (super::forms::urlencode(&s.job_type)) } { (s.job_type) } }
            td { @if s.paused { span.muted { "paused" } } @else {
                ul.compact { @for slot in next_slots(s) { li { (when(slot)) } } } } }
            td { (when_opt(s.last_fired_slot)) }
            td.num { (count(s.fired_count)) }
            td.num.missed { (count(s.skipped_count)) }
            td { (s.last_error.as_deref().unwrap_or_default()) }
            td { @if viewer.can_write() {
                div.actions {
                    @for (action, label) in [if s.paused { ("resume", "Resume") } else { ("pause", "Pause") }, ("run", "Run now")] {
                        form.action method="post" action={ "/ui/schedules/" (name) "/" (action) } {
                            (csrf_field(viewer.csrf()))
                            button type="submit" data-action=(action) { (label) }
                        }
                    }
                }
            } }
        }
    }
}

/// Pause, resume or run a schedule now.
pub async fn act(
    State(state): State<AppState>,
    viewer: Viewer,
    Path((name, action)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, Response> {
    viewer.may_write(&FormData::parse(&body))?;
    let store = state.store();
    let tenant = viewer.tenant();
    let done = match action.as_str() {
        "pause" => {
            store
                .pause_schedule(tenant, &name)
                .await
                .map_err(|e| store_error(&e))?;
            format!("schedule {name} paused")
        }
        "resume" => {
            store
                .resume_schedule(tenant, &name)
                .await
                .map_err(|e| store_error(&e))?;
            format!("schedule {name} resumed")
        }
        "run" => {
            let id = store
                .run_schedule_now(tenant, &name)
                .await
                .map_err(|e| store_error(&e))?;
            format!("schedule {name} ran now: job {id}")
        }
        other => {
            return Err(error_page(
                StatusCode::NOT_FOUND,
                "Not found",
                &format!("unknown schedule action {other:?}: pause, resume or run"),
            ));
        }
    };
    Ok(Redirect::to(&format!(
        "/ui/schedules?{}",
        query_string([("done", done.as_str())])
    ))
    .into_response())
}
