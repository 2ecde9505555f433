//! End to end through the real HTTP API (`sluice_http::serve::app` on an ephemeral port, real
//! Postgres per test, real sample components): every status code the API promises,
//! idempotency under concurrency, tenant isolation, tokens, the rate limit, uploads,
//! the OpenAPI document, and the curl examples of `docs/http-api.md`.

mod body_limits;
mod components;
mod docs;
mod edges;
mod enqueue;
mod isolation;
mod jobs;
mod routes;
mod schedules;
mod tokens;
mod wait;
