//! Durable signed webhooks end to end: events sent with `sluice.send_event` (SQL, in the
//! application's transaction), delivered by real `sluice worker` processes to receivers
//! on 127.0.0.1 (opened with `--egress-allow-network`), every request checked with the
//! Standard Webhooks project's own verifier (the `standardwebhooks` crate). This module
//! holds the area's shared fixture (`setup`, `Ctx`, `send`, `verify`); the cases are in
//! its submodules: `delivery` (one signed delivery per matching endpoint; 500 then 200;
//! 302, forbidden addresses and 410; a receiver slower than the timeout), `sending` (the
//! endpoint read at send time; a rolled-back send), `signing` (secret rotation, both
//! signatures), `trace_context` (an event's trace context on its deliveries), `keys` (the
//! operator's key rotated under the endpoints, a worker with the
//! wrong key) and `boundaries` (tenants kept apart; a worker SIGKILLed mid-delivery, sent
//! again with the same id; events sent with a task's completion).

mod boundaries;
mod delivery;
mod keys;
mod sending;
mod signing;
mod trace_context;

use std::time::Duration;

use crate::egress_support::{Recorded, Reply, TestServer};
use crate::support::secrets::{keyed, new_key, output_of};
use crate::support::worker_process::WorkerProcess;
use crate::support::{Sluice, wait_for};
use serde_json::{Value, json};
use sluice_secrets::{Keyring, SecretKey};
use sluice_shared::webhooks::{create_endpoint, rotate_secret};
use sluice_store::{DeliveryInfo, EndpointUpdate, NewEndpoint, Store, StoreError};
use sqlx::PgPool;
use standardwebhooks::Webhook;

const LOOPBACK: &str = "127.0.0.1/32";
const TENANT: &str = "acme";

struct Ctx {
    sluice: Sluice,
    store: Store,
    key: String,
    keyring: Keyring,
}

fn setup(pool: &PgPool) -> Ctx {
    let sluice = Sluice::new(pool);
    sluice.ok(&["tenants", "create", TENANT]);
    let key = new_key();
    let keyring = Keyring::new(SecretKey::parse("test", &key).unwrap(), Vec::new());
    Ctx {
        sluice,
        store: Store::new(pool.clone()),
        key,
        keyring,
    }
}

impl Ctx {
    async fn endpoint(&self, url: &str, events: &[&str], schedule_ms: &[u64]) -> (i64, String) {
        self.endpoint_with(TENANT, url, events, schedule_ms, None)
            .await
    }

    async fn endpoint_with(
        &self,
        tenant: &str,
        url: &str,
        events: &[&str],
        schedule_ms: &[u64],
        timeout: Option<Duration>,
    ) -> (i64, String) {
        let spec = NewEndpoint {
            tenant: tenant.into(),
            url: url.into(),
            events: events.iter().map(|e| e.to_string()).collect(),
            description: String::new(),
            retry_schedule: Some(
                schedule_ms
                    .iter()
                    .map(|ms| Duration::from_millis(*ms))
                    .collect(),
            ),
            timeout,
        };
        let (info, secret) = create_endpoint(&self.store, Some(&self.keyring), &spec)
            .await
            .unwrap();
        (info.id, secret)
    }

    /// `sluice worker --drain` with the key and loopback opened; returns its log. Off the
    /// test's (current-thread) runtime, which keeps serving the receivers meanwhile.
    async fn drain(&self) -> String {
        let args = [
            "worker",
            "--drain",
            "--drain-horizon",
            "5s",
            "--egress-allow-network",
            LOOPBACK,
        ];
        let mut worker = keyed(&self.sluice, Some(&self.key), &args);
        worker.env("SLUICE_LOG", "info");
        let out = tokio::task::spawn_blocking(move || output_of(worker, None))
            .await
            .unwrap();
        let log = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{log}");
        log
    }

    async fn deliveries(&self, endpoint: i64) -> Vec<DeliveryInfo> {
        self.store
            .webhook_deliveries(TENANT, endpoint, 100)
            .await
            .unwrap()
    }
}

/// `select sluice.send_event(...)` committed on its own; the event id.
async fn send(pool: &PgPool, tenant: &str, event_type: &str, payload: Value) -> i64 {
    sqlx::query_scalar("SELECT sluice.send_event($1, $2, $3)")
        .bind(tenant)
        .bind(event_type)
        .bind(payload)
        .fetch_one(pool)
        .await
        .unwrap()
}

fn url(server: &TestServer) -> String {
    format!("http://127.0.0.1:{}/hook", server.port())
}

fn status(code: u16, body: &str) -> Reply {
    Reply::Respond {
        status: code,
        headers: vec![],
        body: body.as_bytes().to_vec(),
    }
}

/// Verifies `request` with the reference library and `secret`.
fn verify(request: &Recorded, secret: &str) -> Result<(), standardwebhooks::WebhookError> {
    let mut headers = http::HeaderMap::new();
    for (name, value) in &request.headers {
        headers.append(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            http::HeaderValue::from_str(value).unwrap(),
        );
    }
    Webhook::new(secret)
        .unwrap()
        .verify(&request.body, &headers)
}

fn one(deliveries: &[DeliveryInfo]) -> &DeliveryInfo {
    assert_eq!(deliveries.len(), 1, "{deliveries:?}");
    &deliveries[0]
}
