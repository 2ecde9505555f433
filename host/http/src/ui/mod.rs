//! The web dashboard served by `sluice serve` under `/ui`: server-rendered HTML (maud),
//! one small embedded script for live refresh, no build step and nothing fetched from
//! elsewhere. Pages read without JavaScript; every action is a plain HTML form.
//!
//! Owns: the `/ui` routes, sign-in sessions (a token exchanged for an HttpOnly cookie),
//! CSRF checks, and how pages look. Must not: speak SQL or decide job-state rules — every
//! read and action goes through the same `Store` calls as the HTTP API, scoped by the
//! session's tenant — nor ever show a token or secret value, nor import the API
//! (`crate::api`): the state both use is `crate::app_state`, and `crate::serve` mounts
//! the dashboard beside the API.

// Handlers and their checks return a rendered error page as `Err(Response)`, which axum
// sends as is; boxing it would only add noise to every `?`.
#![allow(clippy::result_large_err)]

mod assets;
mod bare;
mod errors;
mod fleet;
mod forms;
mod job_filter;
mod job_page;
mod jobs_list;
mod layout;
mod login;
mod overview;
mod schedules;
mod session;
mod types;
mod usage;
mod views;

use axum::Router;
use axum::response::Redirect;
use axum::routing::{get, post};

use crate::app_state::AppState;

pub use session::SESSION_COOKIE;

/// `/ui/` (a nested router only answers `/ui` itself): the dashboard is at `/ui`.
/// Registered beside the nest by `serve::app`.
pub async fn with_trailing_slash() -> Redirect {
    Redirect::permanent("/ui")
}

/// The dashboard's routes, nested at `/ui` in `sluice serve`'s app beside `/v1` (so
/// the paths below are relative to `/ui`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(login::root))
        .route("/login", get(login::login_page).post(login::sign_in))
        .route("/logout", post(login::sign_out))
        .route("/tenant", post(login::switch_tenant))
        .route("/assets/{name}", get(assets::asset))
        .route("/overview", get(overview::page))
        .route("/jobs", get(jobs_list::page))
        .route("/jobs/bulk", post(jobs_list::bulk))
        .route("/jobs/{id}", get(job_page::page))
        .route("/jobs/{id}/retry", post(job_page::retry))
        .route("/jobs/{id}/cancel", post(job_page::cancel))
        .route("/types", get(types::page))
        .route("/types/{name}/component", post(types::switch_component))
        .route("/types/{name}/pause", post(types::pause))
        .route("/types/{name}/resume", post(types::resume))
        .route("/schedules", get(schedules::page))
        .route("/schedules/{name}/{action}", post(schedules::act))
        .route("/usage", get(usage::page))
        .route("/workers", get(fleet::workers_page))
        .route("/tenants", get(fleet::tenants_page))
        .route("/tenants/{id}/pause", post(fleet::pause_tenant))
        .route("/tenants/{id}/resume", post(fleet::resume_tenant))
        .fallback(errors::not_found_page)
        .layer(axum::middleware::map_response(layout::security_headers))
}
