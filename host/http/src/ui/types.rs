//! Job types and components: each type's component (name, version, sha256, size,
//! contract), its limits and grants, the other uploaded versions of that component, and
//! switching the type to one of them (a rollback) after a confirmation.
//!
//! Its flow controls (docs/flow-control.md) too, with a button that pauses or resumes
//! the type.
//!
//! Owns: that page, the switch and the pause button. Must not: check whether a component fits a type (the
//! store's switch applies the same rules as `sluice types set`).

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use sluice_store::{ComponentRecord, JobTypeRecord};

use super::errors::{error_page, not_found, store_error};
use super::forms::FormData;
use super::layout::{self, Nav};
use super::session::Viewer;
use super::views::{bytes_text, count, csrf_field, duration_text, when};
use crate::app_state::AppState;

pub async fn page(State(state): State<AppState>, viewer: Viewer) -> Result<Response, Response> {
    let store = state.store();
    let tenant = Some(viewer.tenant());
    let types = store
        .list_job_types(tenant)
        .await
        .map_err(|e| store_error(&e))?;
    let components = store
        .list_components(tenant)
        .await
        .map_err(|e| store_error(&e))?;
    let body = html! {
        @if types.is_empty() {
            p.muted { "No job type yet: " code { "sluice push NAME file.wasm" } " uploads a component and registers a type." }
        } @else {
            table #types {
                thead { tr { th { "Type" } th { "Component" } th { "Contract" } th { "sha256" } th { "Size" }
                    th { "Limits" } th { "Grants" } th { "Flow" } th { "Versions" } } }
                tbody { @for t in &types { (type_row(&viewer, t, &components)) } }
            }
        }
        h2 { "Components" }
        table #components {
            thead { tr { th { "Id" } th { "Name" } th { "Version" } th { "Contract" } th { "sha256" } th { "Size" } th { "Uploaded" } } }
            tbody { @for c in &components {
                tr data-component-id=(c.id) {
                    td { (c.id) } td { (c.name) } td { (c.version) } td { (contract(c)) }
                    td { code title=(c.sha256) { (&c.sha256[..c.sha256.len().min(12)]) "…" } }
                    td.num { (bytes_text(c.size)) } td { (when(c.created_at)) }
                }
            } }
        }
    };
    Ok(layout::page(
        &viewer,
        Nav::Types,
        "Job types and components",
        false,
        body,
    ))
}

fn contract(c: &ComponentRecord) -> String {
    format!("sluice:task@0.{}.0", c.contract)
}

fn type_row(viewer: &Viewer, t: &JobTypeRecord, components: &[ComponentRecord]) -> Markup {
    let current = components.iter().find(|c| c.id == t.component_id);
    let versions: Vec<&ComponentRecord> = current.map_or_else(Vec::new, |cur| {
        components.iter().filter(|c| c.name == cur.name).collect()
    });
    let ms = |v: Option<i64>| v.map(|ms| duration_text(ms as f64 / 1000.0));
    // An unset limit is the host's (or the tenant's) default.
    let opt = |v: Option<String>| match v {
        Some(v) => html! { (v) },
        None => html! { span.muted { "default" } },
    };
    html! {
        tr data-type=(t.name) {
            td { strong { (t.name) } br; a href={ "/ui/jobs?type=" (super::forms::urlencode(&t.name)) } { "jobs" } }
            td { @if let Some(c) = current { (c.name) " " (c.version) br; span.muted { "id " (c.id) } } @else { "#" (t.component_id) } }
            td { (super::views::opt(current.map(contract))) }
            td { @if let Some(c) = current { code title=(c.sha256) { (&c.sha256[..c.sha256.len().min(12)]) "…" } } }
            td.num { (super::views::opt(current.map(|c| bytes_text(c.size)))) }
            td { ul.compact {
                li { "attempts " (t.max_attempts) }
                li { "timeout " (opt(ms(t.timeout_ms))) }
                li { "fuel " (opt(t.fuel.map(count))) }
                li { "memory " (opt(t.memory_bytes.map(bytes_text))) }
                li { "output " (opt(t.output_bytes.map(bytes_text))) " · log " (opt(t.log_bytes.map(bytes_text))) }
                li { "backoff " (opt(ms(t.backoff_base_ms))) " → " (opt(ms(t.backoff_cap_ms))) }
                li.durable { @if t.durable { strong { "durable" } " · journal " (opt(t.journal_bytes.map(bytes_text))) } @else { span.muted { "not durable" } } }
            } }
            td { ul.compact {
                li { "HTTP: " @if t.http_allow.is_empty() { span.muted { "none" } } @else { (t.http_allow.join(", ")) } }
                @if let Some(n) = t.http_max_requests { li { "≤ " (n) " requests per attempt" } }
                li { "secrets: " @if t.secrets.is_empty() { span.muted { "none" } } @else { (t.secrets.join(", ")) } }
            } }
            td { (flow_cell(viewer, t)) }
            td {
                @if viewer.can_write() && versions.len() > 1 {
                    form.action.switch method="post" action={ "/ui/types/" (super::forms::urlencode(&t.name)) "/component" } {
                        (csrf_field(viewer.csrf()))
                        select name="component_id" aria-label="component version" {
                            @for c in &versions {
                                option value=(c.id) selected[c.id == t.component_id] { (c.version) " (id " (c.id) ")" }
                            }
                        }
                        button type="submit" { "Switch…" }
                    }
                } @else {
                    (versions.len()) " version" @if versions.len() != 1 { "s" }
                }
            }
        }
    }
}

/// A type's flow controls, and the button that pauses or resumes it.
fn flow_cell(viewer: &Viewer, t: &JobTypeRecord) -> Markup {
    let f = &t.flow;
    let action = if f.paused { "resume" } else { "pause" };
    html! {
        ul.compact {
            li.flow-state { @if f.paused { strong.paused { "paused" } } @else { "running" } }
            @if let Some(n) = f.max_running { li { "≤ " (n) " running" } }
            @if let Some(n) = f.max_running_per_key { li { "≤ " (n) " running per key" } }
            @if let Some(r) = f.rate() { li { "rate " (r.to_string()) } }
            @if let Some(r) = f.rate_per_key() { li { "rate per key " (r.to_string()) } }
            @if let Some(n) = f.max_snoozes { li { "≤ " (n) " snoozes per job" } }
        }
        @if viewer.can_write() {
            form.action method="post" action={ "/ui/types/" (super::forms::urlencode(&t.name)) "/" (action) } {
                (csrf_field(viewer.csrf()))
                button.flow-toggle type="submit" { @if f.paused { "Resume" } @else { "Pause" } }
            }
        }
    }
}

/// Pauses a type (`/ui/types/{name}/pause`): its jobs stay pending, running ones finish.
pub async fn pause(
    state: State<AppState>,
    viewer: Viewer,
    name: Path<String>,
    body: Bytes,
) -> Result<Response, Response> {
    set_paused(state, viewer, name, body, true).await
}

/// Resumes a paused type (`/ui/types/{name}/resume`).
pub async fn resume(
    state: State<AppState>,
    viewer: Viewer,
    name: Path<String>,
    body: Bytes,
) -> Result<Response, Response> {
    set_paused(state, viewer, name, body, false).await
}

async fn set_paused(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(name): Path<String>,
    body: Bytes,
    paused: bool,
) -> Result<Response, Response> {
    viewer.may_write(&FormData::parse(&body))?;
    let change = sluice_store::FlowChange {
        paused: Some(paused),
        ..Default::default()
    };
    state
        .store()
        .set_flow(viewer.tenant(), &name, &change)
        .await
        .map_err(|e| store_error(&e))?;
    Ok(Redirect::to("/ui/types").into_response())
}

/// Switches a type to another component version: a confirmation first, then the switch.
pub async fn switch_component(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Response, Response> {
    let form = FormData::parse(&body);
    viewer.may_write(&form)?;
    let component_id: i64 = form
        .get("component_id")
        .and_then(|id| id.parse().ok())
        .ok_or_else(|| {
            error_page(
                StatusCode::BAD_REQUEST,
                "Refused",
                "component_id: pick a component version",
            )
        })?;
    let store = state.store();
    let current = store
        .get_job_type(viewer.tenant(), &name)
        .await
        .map_err(|e| store_error(&e))?
        .ok_or_else(|| not_found(&format!("There is no job type {name:?}.")))?;
    if form.get("confirmed") != Some("1") {
        let components = store
            .list_components(Some(viewer.tenant()))
            .await
            .map_err(|e| store_error(&e))?;
        let label = |id: i64| {
            components.iter().find(|c| c.id == id).map_or_else(
                || format!("component {id}"),
                |c| {
                    format!(
                        "{} {} (id {}, sha256 {}…)",
                        c.name,
                        c.version,
                        c.id,
                        &c.sha256[..12.min(c.sha256.len())]
                    )
                },
            )
        };
        let body = html! {
            p { "Switch job type " strong { (name) } " from " strong { (label(current.component_id)) }
                " to " strong #switch-target { (label(component_id)) } "?" }
            p.muted { "Attempts that start after the switch run the new component; running attempts finish on the old one." }
            form #confirm-form.action method="post" action={ "/ui/types/" (super::forms::urlencode(&name)) "/component" } {
                (csrf_field(viewer.csrf()))
                input type="hidden" name="component_id" value=(component_id);
                input type="hidden" name="confirmed" value="1";
                button #confirm type="submit" { "Switch" }
                " " a href="/ui/types" { "Back" }
            }
        };
        return Ok(layout::page(
            &viewer,
            Nav::Types,
            "Confirm the switch",
            false,
            body,
        ));
    }
    store
        .set_job_type_component(viewer.tenant(), &name, component_id)
        .await
        .map_err(|e| store_error(&e))?;
    Ok(Redirect::to("/ui/types").into_response())
}
