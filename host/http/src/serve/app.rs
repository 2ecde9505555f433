//! The whole application of `sluice serve`: the API with its fallbacks, the dashboard
//! nested at `/ui`, `GET /metrics`, and the body read timeout around all of them.
//!
//! Must not: hold routes of its own beyond mounting (the API's are `http::router`'s, the
//! dashboard's `ui::router`'s).

use axum::Router;
use axum::middleware::from_fn_with_state;
use axum::routing::get;

use crate::app_state::AppState;
use crate::{api, ui};

/// The API, the dashboard and `/metrics`, with their state. Building it also records the
/// OpenAPI document in the state for `/v1/openapi.json`.
pub fn app(state: AppState) -> Router {
    let router = api::api(&state);
    let mut metrics = crate::scrape::router(state.store().clone(), state.metrics().clone());
    if state.config().metrics_require_admin {
        metrics = metrics.layer(from_fn_with_state(state.clone(), api::require_admin));
    }
    let body_timeout = state.config().body_timeout;
    // The dashboard's forms share the JSON routes' body limit.
    let dashboard = api::with_request_body_limit(ui::router(), &state);
    router
        // The dashboard (`/ui`): HTML pages with their own fallback and error pages.
        .nest("/ui", dashboard)
        .route("/ui/", get(ui::with_trailing_slash))
        .fallback(api::route_not_found)
        .method_not_allowed_fallback(api::method_not_allowed)
        .with_state(state)
        .merge(metrics)
        .layer(from_fn_with_state(body_timeout, api::limit_body_reads))
}
