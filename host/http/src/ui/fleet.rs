//! The admin pages: the worker registry with what each worker runs now, and the tenants
//! with their limits, caps and tokens (labels, created, last used — never values), and
//! the button that pauses or resumes a tenant (docs/flow-control.md).
//!
//! Owns: those two pages and that button. Must not: show them to a tenant's session (they cover the whole
//! fleet; 403), or show a token's value (the store keeps only hashes anyway).

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use sluice_store::{RunningJob, TenantRecord, TokenRecord, WorkerRecord};

use super::errors::store_error;
use super::forms::{FormData, urlencode};
use super::layout::{self, Nav};
use super::session::Viewer;
use super::views::{bytes_text, count, csrf_field, duration_text, opt, when, when_opt};
use crate::app_state::AppState;

/// Running jobs listed on the workers page, at most.
const RUNNING_SHOWN: u32 = 1000;

pub async fn workers_page(
    State(state): State<AppState>,
    viewer: Viewer,
) -> Result<Response, Response> {
    viewer.must_be_admin("The worker registry")?;
    let store = state.store();
    let workers = store.list_workers().await.map_err(|e| store_error(&e))?;
    let running = store
        .running_jobs(RUNNING_SHOWN)
        .await
        .map_err(|e| store_error(&e))?;
    let body = html! {
        @if workers.is_empty() {
            p.muted { "No worker has registered yet: start one with " code { "sluice worker" } "." }
        } @else {
            table #workers {
                thead { tr { th { "Id" } th { "State" } th { "Host" } th { "Version" } th { "Contracts" }
                    th { "Concurrency" } th { "Started" } th { "Last heartbeat" } th { "Running now" } } }
                tbody { @for w in &workers { (worker_row(&viewer, w, &running)) } }
            }
        }
    };
    Ok(layout::page(&viewer, Nav::Workers, "Workers", true, body))
}

fn worker_row(viewer: &Viewer, w: &WorkerRecord, running: &[RunningJob]) -> Markup {
    let jobs: Vec<&RunningJob> = running.iter().filter(|j| j.worker == w.id).collect();
    html! {
        tr data-worker=(w.id) class={ "worker-" (w.state.as_str()) } {
            td { code { (w.id) } br; span.muted { (w.kind.as_str()) } }
            td { span class={ "wstate wstate-" (w.state.as_str()) } { (w.state.as_str()) } }
            td { (w.hostname) " · pid " (w.pid) }
            td { (w.version) }
            td { (w.contracts.join(", ")) }
            td.num { (opt(w.concurrency)) }
            td { (when(w.started_at)) }
            td { (when(w.last_heartbeat)) br; span.muted { "lease " (duration_text(w.lease_ms as f64 / 1000.0))
                @if let Some(stopped) = w.stopped_at { " · stopped " (when(stopped)) } } }
            td.running {
                @if jobs.is_empty() { span.muted { "—" } } @else {
                    (jobs.len()) " job" @if jobs.len() != 1 { "s" } ":"
                    ul.compact { @for j in jobs.iter().take(20) {
                        li {
                            @if j.tenant == viewer.tenant() {
                                a href={ "/ui/jobs/" (j.job_id) } { (j.job_id) }
                            } @else { (j.job_id) }
                            " " (j.job_type) " (" (j.tenant) ", attempt " (j.attempt) ")"
                        }
                    } }
                }
            }
        }
    }
}

pub async fn tenants_page(
    State(state): State<AppState>,
    viewer: Viewer,
) -> Result<Response, Response> {
    viewer.must_be_admin("The tenants page")?;
    let store = state.store();
    let tenants = store.list_tenants().await.map_err(|e| store_error(&e))?;
    let mut rows = Vec::with_capacity(tenants.len());
    for tenant in &tenants {
        let tokens = store
            .list_tokens(&tenant.id)
            .await
            .map_err(|e| store_error(&e))?;
        let cap = store
            .tenant_max_running(&tenant.id)
            .await
            .map_err(|e| store_error(&e))?;
        rows.push(tenant_row(&viewer, tenant, cap, &tokens));
    }
    let body = html! {
        table #tenants {
            thead { tr { th { "Tenant" } th { "Limits and caps" } th { "Tokens" } th { "" } } }
            tbody { @for row in rows { (row) } }
        }
    };
    Ok(layout::page(&viewer, Nav::Tenants, "Tenants", false, body))
}

fn tenant_row(
    viewer: &Viewer,
    t: &TenantRecord,
    cap: Option<u32>,
    tokens: &[TokenRecord],
) -> Markup {
    let l = &t.limits;
    let ms = |v: Option<i64>| v.map(|ms| duration_text(ms as f64 / 1000.0));
    html! {
        tr data-tenant=(t.id) {
            td {
                strong { (t.id) } br; span.muted { "since " (when(t.created_at)) } br;
                @if t.paused { strong.paused.tenant-state { "paused" } } @else { span.tenant-state { "running" } }
                @if viewer.can_write() {
                    form.action method="post" action={ "/ui/tenants/" (urlencode(&t.id)) "/" (if t.paused { "resume" } else { "pause" }) } {
                        (csrf_field(viewer.csrf()))
                        button.tenant-toggle type="submit" { @if t.paused { "Resume" } @else { "Pause" } }
                    }
                }
            }
            td { ul.compact {
                li { "running at once: " (opt(cap)) }
                li { "enqueue rate: " (opt(l.max_enqueue_per_sec.map(|r| format!("{r}/s")))) " · burst " (opt(l.enqueue_burst)) }
                li { "payload " (opt(l.max_payload_bytes.map(|b| bytes_text(b.into())))) " · component " (opt(l.max_component_bytes.map(bytes_text))) }
                li { "timeout " (opt(ms(l.max_timeout_ms))) " · fuel " (opt(l.max_fuel.map(count))) " · memory " (opt(l.max_memory_bytes.map(bytes_text))) " · journal " (opt(l.max_journal_bytes.map(bytes_text))) }
                li { "egress bound: " @match &t.egress_allow { Some(allow) => (allow.join(", ")), None => span.muted { "host deny list only" } } }
            } }
            td {
                table.tokens {
                    @for tok in tokens {
                        tr class=[tok.revoked_at.is_some().then_some("revoked")] {
                            td { (tok.label.as_deref().unwrap_or("(no label)")) }
                            td { @if tok.admin { span.badge { "admin" } } @if tok.read_only { span.badge { "read-only" } } }
                            td { "created " (when(tok.created_at)) }
                            td { "last used " (when_opt(tok.last_used_at)) }
                            td { @if let Some(at) = tok.revoked_at { "revoked " (when(at)) } }
                        }
                    }
                }
                @if tokens.is_empty() { span.muted { "no token" } }
            }
            td {
                @if t.id == viewer.tenant() { span.badge #acting { "acting" } } @else {
                    form.switch method="post" action="/ui/tenant" {
                        (csrf_field(viewer.csrf()))
                        input type="hidden" name="tenant" value=(t.id);
                        button type="submit" data-tenant=(t.id) { "Act as" }
                    }
                }
            }
        }
    }
}

/// Pauses a tenant (`/ui/tenants/{id}/pause`, admins): none of its jobs is claimed until
/// it is resumed; running ones finish.
pub async fn pause_tenant(
    state: State<AppState>,
    viewer: Viewer,
    id: Path<String>,
    body: Bytes,
) -> Result<Response, Response> {
    set_tenant_paused(state, viewer, id, body, true).await
}

/// Resumes a paused tenant (`/ui/tenants/{id}/resume`, admins).
pub async fn resume_tenant(
    state: State<AppState>,
    viewer: Viewer,
    id: Path<String>,
    body: Bytes,
) -> Result<Response, Response> {
    set_tenant_paused(state, viewer, id, body, false).await
}

async fn set_tenant_paused(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    body: Bytes,
    paused: bool,
) -> Result<Response, Response> {
    viewer.must_be_admin("Pausing a tenant")?;
    viewer.may_write(&FormData::parse(&body))?;
    state
        .store()
        .set_tenant_paused(&id, paused)
        .await
        .map_err(|e| store_error(&e))?;
    Ok(Redirect::to("/ui/tenants").into_response())
}
