//! The jobs list: combined filters, keyset pages, and bulk retry / cancel / delete on
//! the ticked jobs or on everything matching the filter (after a confirmation that shows
//! how many match).
//!
//! Owns: that page and the bulk action. Every field of a bulk action (the action, the
//! ids, the filter, the list to return to) is checked before the store is asked to change
//! anything, and what is done afterwards cannot fail: a request answered with an error
//! has changed nothing. Must not: decide which states an action may change (the store's
//! bulk statements apply the single-job rules).

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use sluice_store::{BulkAction, JobSummary};

use super::errors::{error_page, store_error};
use super::forms::{FormData, query_string};
use super::job_filter::{FIELDS, Filter};
use super::layout::{self, Nav};
use super::session::Viewer;
use super::views::{STATES, bytes_text, count, csrf_field, state_badge, when};
use crate::app_state::AppState;

/// Jobs per page.
const PAGE: u32 = 50;

/// The most ids one "ticked jobs" action takes (the store's limit per call).
const MAX_TICKED: usize = 1000;

pub async fn page(
    State(state): State<AppState>,
    viewer: Viewer,
    RawQuery(query): RawQuery,
) -> Result<Response, Response> {
    let form = FormData::parse(&Bytes::from(query.unwrap_or_default()));
    let filter = Filter::parse(&form, viewer.tenant());
    let after = form.get("after").and_then(|a| a.parse::<i64>().ok());
    let (jobs, matching) = if filter.errors.is_empty() {
        let store = state.store();
        let jobs = store
            .search_jobs(&filter.search, after, PAGE + 1)
            .await
            .map_err(|e| store_error(&e))?;
        let matching = store
            .count_jobs(&filter.search)
            .await
            .map_err(|e| store_error(&e))?;
        (jobs, matching)
    } else {
        (Vec::new(), 0)
    };
    let more = jobs.len() > PAGE as usize;
    let jobs = &jobs[..jobs.len().min(PAGE as usize)];
    let next_page = match jobs.last() {
        Some(last) if more => {
            let last = last.id.to_string();
            let pairs = filter.pairs().chain([("after", last.as_str())]);
            Some(format!("/ui/jobs?{}", query_string(pairs)))
        }
        _ => None,
    };
    let status = if filter.errors.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::BAD_REQUEST
    };
    let body = html! {
        @if let Some(done) = form.get("done") { p.notice #bulk-done { (done) } }
        (filter_form(&filter))
        @for error in &filter.errors { p.error { (error) } }
        @if filter.errors.is_empty() {
            p #match-count { (count(matching)) " job" @if matching != 1 { "s" } " match" }
            (job_table(&viewer, &filter, jobs))
            @if let Some(href) = &next_page {
                p { a #next-page href=(href) { "Next page →" } }
            }
            @if viewer.can_write() && matching > 0 { (bulk_matching_form(&viewer, &filter, matching)) }
        }
    };
    let mut response = layout::page(&viewer, Nav::Jobs, "Jobs", true, body);
    *response.status_mut() = status;
    Ok(response)
}

fn filter_form(filter: &Filter) -> Markup {
    html! {
        form #filter.filter method="get" action="/ui/jobs" {
            fieldset.states {
                legend { "State" }
                @for state in STATES {
                    label { input type="checkbox" name="state" value=(state.as_str())
                        checked[filter.has_state(state.as_str())]; (state.as_str()) }
                }
            }
            label { "Type " input name="type" value=(filter.value("type")) size="14"; }
            label { "Priority " input name="priority" value=(filter.value("priority")) size="4" inputmode="numeric"; }
            label { "Id " input name="id" value=(filter.value("id")) size="8" inputmode="numeric"; }
            label { "Idempotency key " input name="key" value=(filter.value("key")) size="14"; }
            label { "Parent " input name="parent" value=(filter.value("parent")) size="8" inputmode="numeric"; }
            label { "Created from " input name="created_from" value=(filter.value("created_from")) placeholder="2026-12-03 16:00" size="16"; }
            label { "to " input name="created_to" value=(filter.value("created_to")) placeholder="UTC" size="16"; }
            label.wide { "Payload contains (JSON) " input name="payload" value=(filter.value("payload")) placeholder=r#"{"customer": 42}"# size="30"; }
            button #apply-filter type="submit" { "Apply" }
            a href="/ui/jobs" { "Clear" }
        }
    }
}

fn job_table(viewer: &Viewer, filter: &Filter, jobs: &[JobSummary]) -> Markup {
    let back: String = query_string(filter.pairs());
    html! {
        form #bulk-form method="post" action="/ui/jobs/bulk" {
            @if viewer.can_write() {
                (csrf_field(viewer.csrf()))
                input type="hidden" name="return" value=(back);
            }
            table #jobs {
                thead { tr {
                    @if viewer.can_write() { th { span.sr { "Select" } } }
                    th { "Id" } th { "Type" } th { "State" } th { "Attempt" } th { "Priority" }
                    th { "Payload" } th { "Created" } th { "Last error" }
                } }
                tbody {
                    @for job in jobs {
                        tr data-job-id=(job.id) {
                            @if viewer.can_write() {
                                td { input type="checkbox" name="ids" value=(job.id) aria-label={ "select job " (job.id) }; }
                            }
                            td { a href={ "/ui/jobs/" (job.id) } { (job.id) } }
                            td { (job.job_type) }
                            td.state { (state_badge(job.state)) }
                            td { (job.attempt) "/" (job.max_attempts) }
                            td.num { (job.priority) }
                            td.num { (bytes_text(job.payload_size.into())) }
                            td { (when(job.created_at)) }
                            td.error-text { (job.last_error.as_deref().map(|e| truncate(e, 80)).unwrap_or_default()) }
                        }
                    }
                }
            }
            @if jobs.is_empty() { p.muted #no-jobs { "No job matches." } }
            @if viewer.can_write() && !jobs.is_empty() {
                div.actions.action {
                    "Ticked jobs: "
                    button name="action" value="retry" type="submit" { "Retry" }
                    button name="action" value="cancel" type="submit" { "Cancel" }
                    button.danger name="action" value="delete" type="submit" { "Delete" }
                }
            }
        }
    }
}

fn bulk_matching_form(viewer: &Viewer, filter: &Filter, matching: i64) -> Markup {
    html! {
        form #bulk-matching.action method="post" action="/ui/jobs/bulk" {
            (csrf_field(viewer.csrf()))
            input type="hidden" name="scope" value="matching";
            @for (name, value) in filter.pairs() { input type="hidden" name=(name) value=(value); }
            "Every job matching this filter (" (count(matching)) "): "
            button name="action" value="retry" type="submit" { "Retry all" }
            button name="action" value="cancel" type="submit" { "Cancel all" }
            button.danger name="action" value="delete" type="submit" { "Delete all" }
        }
    }
}

fn truncate(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

fn parse_action(form: &FormData) -> Result<(BulkAction, &'static str), Response> {
    match form.get("action") {
        Some("retry") => Ok((BulkAction::Retry, "retried")),
        Some("cancel") => Ok((BulkAction::Cancel, "cancelled")),
        Some("delete") => Ok((BulkAction::Delete, "deleted")),
        other => Err(error_page(
            StatusCode::BAD_REQUEST,
            "Refused",
            &format!("unknown bulk action {other:?}: retry, cancel or delete"),
        )),
    }
}

/// A bulk action: on the ticked jobs at once, or on everything matching a filter after
/// a confirmation page (`confirmed=1` runs it).
pub async fn bulk(
    State(state): State<AppState>,
    viewer: Viewer,
    body: Bytes,
) -> Result<Response, Response> {
    let form = FormData::parse(&body);
    viewer.may_write(&form)?;
    let (action, done) = parse_action(&form)?;
    let store = state.store();
    if form.get("scope") == Some("matching") {
        let filter = Filter::parse(&form, viewer.tenant());
        if let Some(error) = filter.errors.first() {
            return Err(error_page(StatusCode::BAD_REQUEST, "Refused", error));
        }
        let back = query_string(filter.pairs());
        if form.get("confirmed") != Some("1") {
            let matching = store
                .count_jobs(&filter.search)
                .await
                .map_err(|e| store_error(&e))?;
            return Ok(confirm_page(
                &viewer,
                &filter,
                form.get("action").unwrap_or_default(),
                matching,
            ));
        }
        let outcome = store
            .bulk_matching(&filter.search, action)
            .await
            .map_err(|e| store_error(&e))?;
        let note = format!(
            "{} of {} matching jobs {done}",
            outcome.changed, outcome.matched
        );
        return Ok(back_to_list(&back, &note));
    }
    let back = return_query(form.get("return").unwrap_or_default())?;
    let ids = ticked_ids(&form)?;
    if ids.is_empty() {
        return Err(error_page(
            StatusCode::BAD_REQUEST,
            "Nothing ticked",
            "Tick the jobs to act on first.",
        ));
    }
    if ids.len() > MAX_TICKED {
        return Err(error_page(
            StatusCode::BAD_REQUEST,
            "Too many",
            &format!(
                "at most {MAX_TICKED} ticked jobs per action; use “every job matching this filter”"
            ),
        ));
    }
    let outcome = store
        .bulk_jobs(viewer.tenant(), action, &ids)
        .await
        .map_err(|e| store_error(&e))?;
    let note = format!("{} of {} ticked jobs {done}", outcome.changed, ids.len());
    Ok(back_to_list(&back, &note))
}

/// The ticked job ids; one that is not a job id refuses the whole action.
fn ticked_ids(form: &FormData) -> Result<Vec<i64>, Response> {
    form.all("ids")
        .map(|id| {
            id.trim().parse().map_err(|_| {
                error_page(
                    StatusCode::BAD_REQUEST,
                    "Refused",
                    &format!("ids: {id:?} is not a job id"),
                )
            })
        })
        .collect()
}

/// The list to go back to after an action on ticked jobs: the `return` field (the
/// list's query, as the list sent it) reduced to the filter's fields and encoded again,
/// so the redirect stays on `/ui/jobs` whatever was posted. A control character (CR, LF,
/// …) refuses the action: no page of ours sends one.
fn return_query(value: &str) -> Result<String, Response> {
    if let Some(c) = value.chars().find(|c| c.is_control()) {
        return Err(error_page(
            StatusCode::BAD_REQUEST,
            "Refused",
            &format!(
                "return: holds the control character {c:?}; it is the jobs list's query, e.g. state=dead&type=echo"
            ),
        ));
    }
    let posted = FormData::parse(&Bytes::copy_from_slice(value.as_bytes()));
    let pairs = FIELDS
        .into_iter()
        .flat_map(|name| posted.all(name).map(move |v| (name, v)));
    Ok(query_string(pairs))
}

fn back_to_list(query: &str, note: &str) -> Response {
    let done = query_string([("done", note)]);
    let sep = if query.is_empty() { "" } else { "&" };
    Redirect::to(&format!("/ui/jobs?{query}{sep}{done}")).into_response()
}

fn confirm_page(viewer: &Viewer, filter: &Filter, action: &str, matching: i64) -> Response {
    let body = html! {
        p { "This will " strong { (action) } " every job of tenant " code { (viewer.tenant()) }
            " matching the filter: " strong #confirm-count { (matching) } " job" @if matching != 1 { "s" } " now." }
        p.muted { "Jobs whose state does not allow it are left as they are (a running job is never deleted). "
            "Jobs that start matching before you confirm are included." }
        ul.filter-summary {
            @for (name, value) in filter.pairs() { li { code { (name) } " = " (value) } }
            @if filter.fields.is_empty() { li { "no filter: every job of the tenant" } }
        }
        form #confirm-form.action method="post" action="/ui/jobs/bulk" {
            (csrf_field(viewer.csrf()))
            input type="hidden" name="scope" value="matching";
            input type="hidden" name="confirmed" value="1";
            input type="hidden" name="action" value=(action);
            @for (name, value) in filter.pairs() { input type="hidden" name=(name) value=(value); }
            button #confirm.danger type="submit" { "Yes, " (action) " " (matching) " jobs" }
            " "
            a href={ "/ui/jobs?" (query_string(filter.pairs())) } { "Back" }
        }
    };
    layout::page(viewer, Nav::Jobs, "Confirm", false, body)
}
