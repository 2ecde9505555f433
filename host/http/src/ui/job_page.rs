//! One job's page: its state and timeline, payload and output, every attempt (worker,
//! duration, fuel, outcome, error) with its stored log, a durable job's journal (each
//! host call: seq, kind, live or replayed), its parent and follow-up jobs, and the retry
//! / cancel actions.
//!
//! Owns: that page and its two actions. Must not: show another tenant's job (the store
//! scopes every read by the session's tenant; a miss is a 404 like a missing id).

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use sluice_store::{AttemptLogRecord, AttemptRecord, JobRecord, JobState, JournalRecord};

use super::errors::{not_found, store_error};
use super::forms::FormData;
use super::layout::{self, Nav};
use super::session::Viewer;
use super::views::{
    between, bytes_text, count, csrf_field, facts, opt, payload_text, state_badge, when,
};
use crate::app_state::AppState;

/// A job id from the path; anything else is a missing job.
fn job_id(text: &str) -> Result<i64, Response> {
    text.parse::<i64>()
        .ok()
        .filter(|id| *id > 0)
        .ok_or_else(|| not_found(&format!("There is no job {text:?}.")))
}

fn no_such_job(id: i64) -> Response {
    not_found(&format!(
        "Job {id} does not exist (or belongs to another tenant)."
    ))
}

pub async fn page(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Result<Response, Response> {
    let id = job_id(&id)?;
    let store = state.store();
    let tenant = Some(viewer.tenant());
    let job = store
        .get(tenant, id)
        .await
        .map_err(|e| store_error(&e))?
        .ok_or_else(|| no_such_job(id))?;
    let attempts = store
        .attempts(tenant, id)
        .await
        .map_err(|e| store_error(&e))?;
    let logs = store
        .attempt_logs(tenant, id, None)
        .await
        .map_err(|e| store_error(&e))?;
    let journal = store
        .journal(tenant, id)
        .await
        .map_err(|e| store_error(&e))?;
    let title = format!("Job {id} · {}", job.job_type);
    let live = matches!(
        job.state,
        JobState::Pending | JobState::Running | JobState::Waiting
    );
    let body = html! {
        p { "State " span #job-state class={ "state state-" (job.state.as_str()) } { (job.state.as_str()) }
            @if job.cancel_requested && job.state == JobState::Running { " " span.badge #cancel-requested { "cancel requested" } } }
        (actions(&viewer, &job))
        (summary(&job))
        h2 { "Timeline" }
        (timeline(&job, &attempts))
        h2 { "Payload " button.copy type="button" data-copy="#job-payload" hidden { "Copy" } }
        (bytes_block("job-payload", &job.payload))
        @if let Some(output) = &job.output {
            h2 { "Output" }
            (bytes_block("job-output", output))
        }
        @if let Some(error) = &job.last_error {
            h2 { "Last error" }
            pre #job-error { (error) }
        }
        h2 { "Attempts" }
        (attempt_table(&attempts, &logs))
        @if !journal.is_empty() {
            h2 { "Journal" }
            (journal_timeline(&journal))
        }
    };
    Ok(layout::page(&viewer, Nav::Jobs, &title, live, body))
}

/// A durable job's journal as a timeline: each host call its guest observed, in order,
/// live in the attempt that recorded it, replayed by the later ones.
fn journal_timeline(journal: &[JournalRecord]) -> Markup {
    html! {
        table #journal {
            thead { tr { th { "seq" } th { "call" } th { "result" } th { "attempt" } th { "" } } }
            tbody {
                @for e in journal {
                    tr data-seq=(e.seq) {
                        td.num { (e.seq) }
                        td { (e.kind) " " code { (e.request) } }
                        td { (e.summary) }
                        td.num { (e.attempt) }
                        td { @if e.replayed { span.badge { "replayed" } } @else { span.muted { "live" } } }
                    }
                }
            }
        }
    }
}

fn actions(viewer: &Viewer, job: &JobRecord) -> Markup {
    let retry = matches!(job.state, JobState::Dead | JobState::Cancelled);
    let cancel = matches!(job.state, JobState::Pending | JobState::Waiting)
        || (job.state == JobState::Running && !job.cancel_requested);
    html! {
        @if viewer.can_write() && (retry || cancel) {
            div.actions {
                @if retry {
                    form.action method="post" action={ "/ui/jobs/" (job.id) "/retry" } {
                        (csrf_field(viewer.csrf()))
                        button #retry type="submit" { "Retry" }
                    }
                }
                @if cancel {
                    form.action method="post" action={ "/ui/jobs/" (job.id) "/cancel" } {
                        (csrf_field(viewer.csrf()))
                        button #cancel.danger type="submit" { "Cancel" }
                    }
                }
            }
        }
    }
}

fn summary(job: &JobRecord) -> Markup {
    facts([
        (
            "Type",
            html! { a href={ "/ui/jobs?type=" (super::forms::urlencode(&job.job_type)) } { (job.job_type) } },
        ),
        ("Priority", html! { (job.priority) }),
        ("Attempt", html! { (job.attempt) " of " (job.max_attempts) }),
        (
            "Concurrency key",
            html! { @if let Some(key) = &job.concurrency_key { code { (key) } } @else { span.muted { "—" } } },
        ),
        (
            "Held back",
            html! { @if let Some(held) = &job.held { span #held { (held.to_string()) } } @else { span.muted { "—" } } },
        ),
        (
            "Waiting for",
            html! { @if let Some(waits) = sluice_wire::jobs::waiting_text(job) { span #waiting-for { (waits) } } @else { span.muted { "—" } } },
        ),
        ("Run at", when(job.run_at)),
        (
            "Idempotency key",
            html! { @if let Some(key) = &job.idempotency_key { code { (key) } " (" (job.key_scope.as_str()) ")" } @else { span.muted { "—" } } },
        ),
        (
            "Worker",
            html! { (opt(job.locked_by.as_deref())) @if let Some(until) = job.locked_until { " · lease until " (when(until)) } },
        ),
        (
            "Parent",
            html! { @if let Some(parent) = job.parent_id { a #parent href={ "/ui/jobs/" (parent) } { "job " (parent) } } @else { span.muted { "—" } } },
        ),
        (
            "Follow-up jobs",
            html! {
                @if job.children_count == 0 { span.muted { "none" } } @else {
                    ul #children.inline {
                        @for child in &job.children { li { a href={ "/ui/jobs/" (child) } { (child) } } }
                    }
                    @if job.children_count as usize > job.children.len() {
                        a href={ "/ui/jobs?parent=" (job.id) } { "all " (count(job.children_count)) }
                    }
                }
            },
        ),
    ])
}

fn timeline(job: &JobRecord, attempts: &[AttemptRecord]) -> Markup {
    html! {
        ol.timeline #timeline {
            li { (when(job.created_at)) " created" }
            @for a in attempts {
                li { (when(a.started_at)) " attempt " (a.attempt) " started on " code { (a.worker) } }
                @if let Some(end) = a.finished_at {
                    li { (when(end)) " attempt " (a.attempt) " ended: "
                        (a.outcome.map_or("—", |o| o.as_str())) " after " (between(a.started_at, Some(end))) }
                }
            }
            @if let Some(end) = job.finished_at {
                li { (when(end)) " " (state_badge(job.state)) }
            }
        }
    }
}

fn bytes_block(id: &str, bytes: &[u8]) -> Markup {
    let (text, note) = payload_text(bytes);
    html! {
        @if let Some(note) = note { p.muted { (note) } }
        pre id=(id) { (text) }
    }
}

fn attempt_table(attempts: &[AttemptRecord], logs: &[AttemptLogRecord]) -> Markup {
    html! {
        @if attempts.is_empty() {
            p.muted #no-attempts { "No attempt yet." }
        } @else {
            table #attempts {
                thead { tr { th { "#" } th { "Worker" } th { "Started" } th { "Duration" }
                    th { "Fuel" } th { "Outcome" } th { "Error" } } }
                tbody {
                    @for a in attempts {
                        tr.attempt data-attempt=(a.attempt) {
                            td { (a.attempt) }
                            td { code { (a.worker) } }
                            td { (when(a.started_at)) }
                            td { (between(a.started_at, a.finished_at)) }
                            td.num { (opt(a.fuel_used.map(count))) }
                            td { (a.outcome.map_or("running", |o| o.as_str())) }
                            td { (opt(a.error.as_deref())) }
                        }
                        @if let Some(log) = logs.iter().find(|l| l.attempt_id == a.id && l.has_log()) {
                            tr.log { td colspan="7" {
                                details open {
                                    summary { "Log of attempt " (a.attempt) " (" (bytes_text(log.log.as_ref().map_or(0, |b| b.len() as i64))) ")" }
                                    pre.attempt-log { (log.text()) }
                                }
                            } }
                        }
                    }
                }
            }
        }
    }
}

/// Brings a dead or cancelled job back to pending.
pub async fn retry(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, Response> {
    act(&state, &viewer, &id, &body, Action::Retry).await
}

/// Cancels a pending job, or asks a running one's worker to stop it.
pub async fn cancel(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, Response> {
    act(&state, &viewer, &id, &body, Action::Cancel).await
}

enum Action {
    Retry,
    Cancel,
}

/// One job's action, then back to its page.
async fn act(
    state: &AppState,
    viewer: &Viewer,
    id: &str,
    body: &Bytes,
    action: Action,
) -> Result<Response, Response> {
    viewer.may_write(&FormData::parse(body))?;
    let id = job_id(id)?;
    let (store, tenant) = (state.store(), Some(viewer.tenant()));
    match action {
        Action::Retry => store.retry(tenant, id).await.map(|_| ()),
        Action::Cancel => store.cancel(tenant, id).await.map(|_| ()),
    }
    .map_err(|e| store_error(&e))?;
    Ok(Redirect::to(&format!("/ui/jobs/{id}")).into_response())
}
