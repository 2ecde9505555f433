//! The HTTP API served by `sluice serve`: JSON over axum, bearer tokens per tenant.
//!
//! Thin by design: handlers authenticate ([`auth::Caller`]), parse, call one or two
//! `sluice_store::Store` methods scoped by the caller's tenant, and answer with a view of
//! `crate::wire` (the JSON the CLI's `--json` prints too). No
//! SQL and no wasmtime here (uploads are validated through `sluice_sandbox::Sandbox`).
//!
//! Files: `router` (every route, generated OpenAPI), `auth` (tokens → tenant),
//! `error` (the one error shape, axum rejections), `rate_limit` (token bucket),
//! `state`, `jobs` + `job_views` (requests) + `attempt_logs`, `components`, `job_types`,
//! `secrets`, `webhooks` + `events` (webhook endpoints, events, deliveries), `tenants`
//! (one tenant's caps), `stats`, `workers`, `health`, `openapi`,
//! `constraints` + `patterns` (what the document adds to the derived schemas, from the
//! server's own constants), `server` (connections, header timeout), `body_limit` (413 on
//! a declared length over the route's limit, before reading), `body_timeout`, `validate`
//! (field checks), `whole` (integers as JSON Schema counts them: `3.0` is 3).

mod attempt_logs;
mod auth;
mod body_limit;
mod body_timeout;
mod components;
mod constraints;
mod error;
mod events;
mod health;
mod job_types;
mod job_views;
mod jobs;
mod openapi;
mod patterns;
mod rate_limit;
mod router;
mod schedules;
mod secrets;
mod server;
mod state;
mod stats;
mod tenants;
mod validate;
mod webhooks;
mod whole;
mod workers;

use std::future::Future;

pub use auth::{ENV_ADMIN_HOME_TENANT, TENANT_HEADER};
pub use router::{api_routes, app};
pub use server::{DEFAULT_HEADER_TIMEOUT, serve_with};
pub use state::{AppState, ServeConfig};

/// Serves `app` on `listener` until `shutdown` completes, then finishes the requests in
/// flight; request headers must arrive within [`DEFAULT_HEADER_TIMEOUT`].
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, app, DEFAULT_HEADER_TIMEOUT, shutdown).await
}
