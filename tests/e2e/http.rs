//! End to end through the real HTTP API (`sluice::http::app` on an ephemeral port, real
//! Postgres per test, real sample components): every status code the API promises,
//! idempotency under concurrency, tenant isolation, tokens, the rate limit, uploads,
//! the OpenAPI document, and the curl examples of `docs/http-api.md`.

#[path = "support/http.rs"]
mod http_support;
mod support;

#[path = "e2e_http/body_limits.rs"]
mod body_limits;
#[path = "e2e_http/components.rs"]
mod components;
#[path = "e2e_http/docs.rs"]
mod docs;
#[path = "e2e_http/edges.rs"]
mod edges;
#[path = "e2e_http/enqueue.rs"]
mod enqueue;
#[path = "e2e_http/isolation.rs"]
mod isolation;
#[path = "e2e_http/jobs.rs"]
mod jobs;
#[path = "e2e_http/routes.rs"]
mod routes;
#[path = "e2e_http/schedules.rs"]
mod schedules;
#[path = "e2e_http/tokens.rs"]
mod tokens;
