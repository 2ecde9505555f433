//! Every route of the API, in one place. Routes are registered through utoipa-axum's
//! `OpenApiRouter`, so registering a route is what puts it in `/v1/openapi.json`.
//!
//! Must not: hold handler logic, or mount anything but the API (`crate::serve` mounts
//! it beside the dashboard and `/metrics`, with the API's fallbacks for unknown routes
//! and methods: 404 `route_not_found`, 405 `method_not_allowed`).

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware::from_fn_with_state;
use utoipa::OpenApi as _;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::body_limit::{RouteLimit, refuse_declared_over};
use super::openapi::ApiDoc;
use super::state::AppState;
use super::{
    attempt_logs, components, events, flow, health, job_types, jobs, journal, openapi, schedules,
    secrets, stats, tenants, usage, webhooks, workers,
};

/// The fixed body limit of the JSON routes and the dashboard's forms.
fn request_body_limit(state: &AppState) -> RouteLimit {
    RouteLimit {
        bytes: state.config().max_request_body as u64,
        what: "the server's --max-request-body",
    }
}

/// The documented API: every route here is in the OpenAPI document. Every route group
/// refuses a declared body over its limit before reading it (`body_limit`).
pub fn api_routes(state: &AppState) -> OpenApiRouter<AppState> {
    json_routes(state).merge(upload_routes())
}

/// Component uploads read the raw body with the tenant's component size limit: the
/// handler checks the declared length against it right after authentication and caps
/// the body while reading (413 above it). `DefaultBodyLimit` only applies to the JSON
/// extractors, and the JSON routes' declared-length layer must not apply here. The `GET`
/// of the same path (one component) is registered with it: it reads no body.
fn upload_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(
        components::put_component,
        components::get_component
    ))
}

/// Every other route: JSON bodies (or none) up to `--max-request-body`.
fn json_routes(state: &AppState) -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(jobs::enqueue, jobs::list_jobs))
        // `/v1/jobs:batch` is a plain static segment for axum 0.8 (matchit 0.8 uses
        // `{param}`, so a colon is an ordinary character); it cannot be captured as
        // `{id}` of `/v1/jobs/{id}` either, because that route has a slash first.
        .routes(routes!(jobs::enqueue_batch))
        .routes(routes!(jobs::get_job))
        .routes(routes!(jobs::list_attempts))
        .routes(routes!(jobs::cancel_job))
        .routes(routes!(jobs::retry_job))
        .routes(routes!(jobs::send_signal))
        .routes(routes!(attempt_logs::get_attempt_log))
        .routes(routes!(journal::get_journal))
        .routes(routes!(job_types::put_job_type, job_types::get_job_type))
        .routes(routes!(job_types::list_job_types))
        .routes(routes!(flow::patch_flow))
        .routes(routes!(flow::pause_type))
        .routes(routes!(flow::resume_type))
        .routes(routes!(flow::pause_tenant))
        .routes(routes!(flow::resume_tenant))
        .routes(routes!(components::list_components))
        .routes(routes!(
            schedules::create_schedule,
            schedules::list_schedules
        ))
        .routes(routes!(schedules::get_schedule, schedules::delete_schedule))
        .routes(routes!(schedules::pause_schedule))
        .routes(routes!(schedules::resume_schedule))
        .routes(routes!(secrets::put_secret, secrets::delete_secret))
        .routes(routes!(secrets::list_secrets))
        .routes(routes!(webhooks::create_endpoint, webhooks::list_endpoints))
        .routes(routes!(
            webhooks::get_endpoint,
            webhooks::update_endpoint,
            webhooks::delete_endpoint
        ))
        .routes(routes!(webhooks::rotate_secret))
        .routes(routes!(webhooks::test_endpoint))
        .routes(routes!(events::list_deliveries))
        .routes(routes!(events::get_delivery))
        .routes(routes!(events::redeliver))
        .routes(routes!(events::send_event))
        .routes(routes!(stats::stats))
        .routes(routes!(usage::usage))
        .routes(routes!(workers::list_workers))
        .routes(routes!(tenants::get_tenant))
        .routes(routes!(health::healthz))
        .routes(routes!(openapi::openapi_json))
        .layer(DefaultBodyLimit::max(state.config().max_request_body))
        .layer(from_fn_with_state(
            request_body_limit(state),
            refuse_declared_over,
        ))
    // `GET /metrics` is merged by `serve::app`, outside the documented API, without
    // authentication unless `--metrics-auth` (it shows counts, never job contents).
}

/// The API as served: its routes, with the OpenAPI document recorded in the state for
/// `/v1/openapi.json`. `crate::serve` adds the fallbacks, the dashboard and `/metrics`.
pub fn api(state: &AppState) -> Router<AppState> {
    let (router, document) = api_routes(state).split_for_parts();
    state.set_openapi_json(openapi::finish(&document));
    router
}

/// `router` with the JSON routes' body limit (the dashboard's forms share it).
pub fn with_request_body_limit(router: Router<AppState>, state: &AppState) -> Router<AppState> {
    router
        .layer(DefaultBodyLimit::max(state.config().max_request_body))
        .layer(from_fn_with_state(
            request_body_limit(state),
            refuse_declared_over,
        ))
}
