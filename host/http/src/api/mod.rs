//! The HTTP API served by `sluice serve`: JSON over axum, bearer tokens per tenant.
//!
//! Thin by design: handlers authenticate ([`auth::Caller`]), parse, call one or two
//! `sluice_store::Store` methods scoped by the caller's tenant, and answer with a view of
//! `sluice_wire` (the JSON the CLI's `--json` prints too). No
//! SQL and no wasmtime here (uploads are validated through `sluice_sandbox::Sandbox`).
//!
//! Files: `router` (every route, generated OpenAPI), `auth` (tokens → tenant),
//! `error` (the one error shape, axum rejections), `jobs` + `job_views` (requests) +
//! `attempt_logs`, `journal` (a durable job's host calls), `components`, `job_types`, `flow`
//! (pause, resume, caps and rates of types; pausing tenants), `secrets`, `webhooks` + `events` (webhook
//! endpoints, events, deliveries), `tenants` (one tenant's caps), `stats`, `usage` (metered usage), `workers`,
//! `health`, `trace_context` (W3C trace context at the enqueue routes), `openapi`, `constraints` + `patterns` (what the document adds to the derived
//! schemas, from the server's own constants), `body_limit` (413 on a declared length over
//! the route's limit, before reading), `body_timeout`, `validate` (field checks), `whole`
//! (integers as JSON Schema counts them: `3.0` is 3). The JSON answered is `sluice_wire`'s.
//! The state handlers share (and its rate limiter) is `crate::app_state`, shared with the
//! dashboard; mounting the API beside the dashboard and `/metrics`, and serving
//! connections, is `crate::serve`'s.
//!
//! Must not: import the dashboard (`crate::ui`), the worker or the CLI.

mod attempt_logs;
mod auth;
mod body_limit;
mod body_timeout;
mod components;
mod constraints;
mod error;
mod events;
mod flow;
mod health;
mod job_types;
mod job_views;
mod jobs;
mod journal;
mod openapi;
mod patterns;
mod router;
mod schedules;
mod secrets;
mod stats;
mod tenants;
mod trace_context;
mod usage;
mod validate;
mod webhooks;
mod whole;
mod workers;

// Handlers name the shared state `super::state` and its limiter `super::rate_limit`.
use crate::app_state::{self as state, rate_limit};

pub use auth::{TENANT_HEADER, require_admin};
pub use body_timeout::limit_body_reads;
pub use error::{method_not_allowed, route_not_found};
pub use job_views::MAX_JOB_WAIT;
pub use router::{api, api_routes, with_request_body_limit};
pub use state::{AppState, ENV_ADMIN_HOME_TENANT, ServeConfig};
