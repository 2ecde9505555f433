//! What every handler of `sluice serve` shares, the API's (`crate::api`) and the
//! dashboard's (`crate::ui`): the store, a sandbox used only to validate uploads, the
//! admin token's hash, the enqueue rate limiter, the waits for finished jobs and the
//! generated OpenAPI document.
//!
//! A leaf below both, so that neither imports the other (`crate::serve` mounts them
//! together). Must not: hold per-request data or a token in clear, or import the API,
//! the dashboard or what serves them.

pub mod rate_limit;
pub mod wait_slots;

use std::sync::{Arc, OnceLock};

use sluice_sandbox::Sandbox;
use sluice_store::{FinishWaits, Store, token_hash};

use rate_limit::RateLimiter;
use wait_slots::WaitSlots;

/// The tenant an admin token given by `SLUICE_ADMIN_TOKEN` acts for without the header.
pub const ENV_ADMIN_HOME_TENANT: &str = "default";

/// Settings of one `sluice serve` process. `Debug` hides the admin token.
#[derive(Clone)]
pub struct ServeConfig {
    /// A token accepted as admin for any tenant (`SLUICE_ADMIN_TOKEN`), besides admin
    /// tokens stored in the database.
    pub admin_token: Option<String>,
    /// Component size limit for tenants without their own `max_component_bytes`.
    pub default_max_component_bytes: u64,
    /// Largest request body outside component uploads (JSON requests, dashboard forms);
    /// a larger declared `Content-Length` is refused before the body is read.
    pub max_request_body: usize,
    /// `/metrics` asks for an admin token (default: open, for Prometheus scrapers).
    pub metrics_require_admin: bool,
    /// Longest wait for the next piece of a request body (default 30 s); a stalled body
    /// is answered 408 and its connection closed.
    pub body_timeout: std::time::Duration,
    /// The secrets keys `PUT /v1/secrets/{name}` seals with (`None`: it answers 503).
    pub secrets: Option<sluice_secrets::Keyring>,
    /// Longest a `GET /v1/jobs/{id}?wait=` request waits here (at most the API's 300 s):
    /// a longer wait asked for answers at this point with the job as it is, as at the
    /// end of any wait (a proxy's idle timeout may call for less).
    pub max_job_wait: std::time::Duration,
    /// Where enqueue spans go (docs/observability.md); disabled by default. A
    /// `traceparent` sent with a job is kept with it either way.
    pub tracer: sluice_trace::Tracer,
}

impl std::fmt::Debug for ServeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeConfig")
            .field(
                "admin_token",
                &self.admin_token.as_ref().map(|_| "<hidden>"),
            )
            .field(
                "default_max_component_bytes",
                &self.default_max_component_bytes,
            )
            .field("max_request_body", &self.max_request_body)
            .field("body_timeout", &self.body_timeout)
            .field("secrets", &self.secrets.as_ref().map(|k| k.ids()))
            .field("max_job_wait", &self.max_job_wait)
            .field("tracing", &self.tracer.is_enabled())
            .finish()
    }
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            admin_token: None,
            default_max_component_bytes: 50 << 20,
            max_request_body: 16 << 20,
            metrics_require_admin: false,
            body_timeout: std::time::Duration::from_secs(30),
            secrets: None,
            max_job_wait: std::time::Duration::from_secs(300),
            tracer: sluice_trace::Tracer::disabled(),
        }
    }
}

/// Cheap to clone: an `Arc`.
#[derive(Clone, Debug)]
pub struct AppState {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    store: Store,
    sandbox: Sandbox,
    admin_token_hash: Option<[u8; 32]>,
    config: ServeConfig,
    rate_limiter: RateLimiter,
    finish_waits: FinishWaits,
    wait_slots: WaitSlots,
    openapi: OnceLock<String>,
    metrics: sluice_shared::metrics::Metrics,
}

impl AppState {
    /// The state of one `sluice serve`: hashes `config.admin_token` once, and starts an
    /// empty rate limiter and a fresh metrics registry.
    pub fn new(store: Store, sandbox: Sandbox, config: ServeConfig) -> AppState {
        let metrics = sluice_shared::metrics::Metrics::new();
        metrics.watch_tracer(&config.tracer);
        AppState {
            inner: Arc::new(Inner {
                finish_waits: FinishWaits::new(store.clone()),
                wait_slots: WaitSlots::default(),
                store,
                sandbox,
                admin_token_hash: config.admin_token.as_deref().map(token_hash),
                config,
                rate_limiter: RateLimiter::default(),
                openapi: OnceLock::new(),
                metrics,
            }),
        }
    }

    /// The store every handler reads and writes through.
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// This process's metrics (served at `/metrics`).
    pub fn metrics(&self) -> &sluice_shared::metrics::Metrics {
        &self.inner.metrics
    }

    /// The sandbox: it validates uploaded components, and its egress networks check job
    /// types' allow lists (the API runs no jobs).
    pub fn sandbox(&self) -> &Sandbox {
        &self.inner.sandbox
    }

    /// The settings `sluice serve` was started with.
    pub fn config(&self) -> &ServeConfig {
        &self.inner.config
    }

    /// The per-tenant enqueue buckets (`max_enqueue_per_sec`, `enqueue_burst`).
    pub fn rate_limiter(&self) -> &RateLimiter {
        &self.inner.rate_limiter
    }

    /// The waits of `GET /v1/jobs/{id}?wait=` (one LISTEN connection for all of them).
    pub fn finish_waits(&self) -> &FinishWaits {
        &self.inner.finish_waits
    }

    /// The open waits per tenant ([`wait_slots::MAX_WAITS_PER_TENANT`]).
    pub fn wait_slots(&self) -> &WaitSlots {
        &self.inner.wait_slots
    }

    /// True when `hash` is the hash of the configured `SLUICE_ADMIN_TOKEN`. Compares
    /// hashes, so the timing says nothing about the secret.
    pub fn is_env_admin_token(&self, hash: &[u8; 32]) -> bool {
        self.inner.admin_token_hash.as_ref() == Some(hash)
    }

    /// The OpenAPI document (JSON), set once when the router is built.
    pub fn openapi_json(&self) -> &str {
        self.inner.openapi.get().map_or("{}", String::as_str)
    }

    pub(crate) fn set_openapi_json(&self, json: String) {
        let _ = self.inner.openapi.set(json);
    }
}
