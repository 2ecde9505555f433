//! Durable signed webhooks end to end: events sent with `sluice.send_event` (SQL, in the
//! application's transaction), delivered by real `sluice worker` processes to receivers
//! on 127.0.0.1 (opened with `--egress-allow-network`), every request checked with the
//! Standard Webhooks project's own verifier (the `standardwebhooks` crate). Cases: one
//! signed delivery per matching endpoint; 500 then 200 (two attempts, one `webhook-id`);
//! 302, forbidden addresses and 410 (dead after one attempt, 410 disables the endpoint);
//! a receiver slower than the timeout (retried); the endpoint read at send time (new URL,
//! deleted, disabled); a rolled-back send (nothing); secret rotation (both signatures);
//! the operator's key rotated under the endpoints, and a worker with the wrong key;
//! tenants kept apart; and a worker SIGKILLed mid-delivery (sent again, same id).

mod boundaries;

mod keys;

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

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn one_signed_delivery_per_matching_enabled_endpoint(pool: PgPool) {
    let ctx = setup(&pool);
    let (receiver, other, off) = (
        // A NUL in the answer: kept as U+FFFD, and the history still reads.
        TestServer::start(status(200, "thanks\0!")).await,
        TestServer::start(status(200, "no")).await,
        TestServer::start(status(200, "no")).await,
    );
    let (ep, secret) = ctx.endpoint(&url(&receiver), &["invoice.*"], &[]).await;
    let (ep_other, _) = ctx.endpoint(&url(&other), &["user.*"], &[]).await;
    let (ep_off, _) = ctx.endpoint(&url(&off), &["*"], &[]).await;
    let disable = EndpointUpdate {
        enabled: Some(false),
        ..EndpointUpdate::default()
    };
    ctx.store
        .update_webhook_endpoint(TENANT, ep_off, &disable)
        .await
        .unwrap();

    let event = send(
        &pool,
        TENANT,
        "invoice.paid",
        json!({"invoice": 42, "note": "é"}),
    )
    .await;
    ctx.drain().await;

    let requests = receiver.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    verify(request, &secret).expect("the reference verifier accepts the request");
    assert_eq!(request.method, "POST");
    assert_eq!(request.target, "/hook");
    assert_eq!(
        request.header("webhook-id"),
        Some(format!("msg_{event}_{ep}").as_str())
    );
    assert_eq!(request.header("sluice-webhook-attempt"), Some("1"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert!(
        request
            .header("user-agent")
            .unwrap()
            .starts_with("Sluice-Webhooks/")
    );
    let body: Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(body["type"], "invoice.paid");
    assert_eq!(body["id"], format!("evt_{event}"));
    assert_eq!(body["data"], json!({"invoice": 42, "note": "é"}));
    assert!(body["timestamp"].as_str().unwrap().ends_with('Z'));
    assert_eq!((other.accepts(), off.accepts()), (0, 0));

    let delivered = ctx.deliveries(ep).await;
    let delivery = one(&delivered);
    assert_eq!(
        (
            delivery.state.as_str(),
            delivery.attempt,
            delivery.last_status
        ),
        ("completed", 1, Some(200))
    );
    assert_eq!(delivery.response.as_deref(), Some("thanks\u{FFFD}!"));
    assert_eq!(delivery.event_type.as_deref(), Some("invoice.paid"));
    assert!(ctx.deliveries(ep_other).await.is_empty());
    assert!(ctx.deliveries(ep_off).await.is_empty());
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_500_then_200_is_two_attempts_with_one_id_and_two_valid_signatures(pool: PgPool) {
    let ctx = setup(&pool);
    let receiver = TestServer::start_script(vec![status(500, "busy"), status(204, "")]).await;
    // Over a second apart, so the two timestamps differ.
    let (ep, secret) = ctx.endpoint(&url(&receiver), &["*"], &[1_100]).await;
    send(&pool, TENANT, "invoice.paid", json!({"n": 1})).await;
    ctx.drain().await;

    let requests = receiver.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    for request in &requests {
        verify(request, &secret).expect("each attempt is signed afresh");
    }
    let header = |i: usize, name: &str| requests[i].header(name).unwrap().to_owned();
    assert_eq!(header(0, "webhook-id"), header(1, "webhook-id"));
    assert_ne!(
        header(0, "webhook-timestamp"),
        header(1, "webhook-timestamp")
    );
    assert_eq!(
        (
            header(0, "sluice-webhook-attempt"),
            header(1, "sluice-webhook-attempt")
        ),
        ("1".into(), "2".into())
    );
    assert_eq!(
        requests[0].body, requests[1].body,
        "the body is byte-identical"
    );
    let delivered = ctx.deliveries(ep).await;
    let delivery = one(&delivered);
    assert_eq!(
        (
            delivery.state.as_str(),
            delivery.attempt,
            delivery.last_status
        ),
        ("completed", 2, Some(204))
    );
    let history: Vec<(i32, String, Option<String>)> = sqlx::query_as(
        "SELECT attempt, outcome::text, error FROM sluice.job_attempts WHERE job_id = $1 ORDER BY attempt",
    )
    .bind(delivery.id)
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(history[0].1, "retry");
    assert!(
        history[0]
            .2
            .as_deref()
            .unwrap()
            .starts_with("HTTP 500: busy"),
        "{history:?}"
    );
    assert_eq!(history[1].1, "completed");
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn redirects_forbidden_addresses_and_gone_endpoints_die_after_one_attempt(pool: PgPool) {
    let ctx = setup(&pool);
    let moved = TestServer::start(Reply::Respond {
        status: 302,
        headers: vec![("location".into(), "http://127.0.0.1:1/elsewhere".into())],
        body: vec![],
    })
    .await;
    let gone = TestServer::start(status(410, "gone")).await;
    let (ep_moved, _) = ctx.endpoint(&url(&moved), &["*"], &[100]).await;
    let (ep_gone, _) = ctx.endpoint(&url(&gone), &["*"], &[100]).await;
    let (ep_metadata, _) = ctx
        .endpoint("http://169.254.169.254/latest", &["*"], &[100])
        .await;
    let (ep_private, _) = ctx
        .endpoint("http://10.0.0.1:8080/hook", &["*"], &[100])
        .await;
    send(&pool, TENANT, "invoice.paid", json!({})).await;
    ctx.drain().await;

    let dead = |d: &[DeliveryInfo]| {
        let d = one(d).clone();
        assert_eq!((d.state.as_str(), d.attempt), ("dead", 1), "{d:?}");
        d.last_error.unwrap()
    };
    let error = dead(&ctx.deliveries(ep_moved).await);
    assert!(
        error.contains("redirect refused") && error.contains("302") && error.contains("/elsewhere"),
        "{error}"
    );
    assert_eq!(moved.requests().len(), 1, "the redirect is not followed");
    for ep in [ep_metadata, ep_private] {
        let error = dead(&ctx.deliveries(ep).await);
        assert!(error.contains("destination-IP-prohibited"), "{error}");
    }
    let error = dead(&ctx.deliveries(ep_gone).await);
    assert!(error.contains("410"), "{error}");
    let endpoint = ctx
        .store
        .get_webhook_endpoint(TENANT, ep_gone)
        .await
        .unwrap();
    assert!(!endpoint.enabled);
    assert!(endpoint.disabled_reason.unwrap().contains("410 Gone"));
    // A disabled endpoint gets no new deliveries.
    send(&pool, TENANT, "invoice.paid", json!({})).await;
    assert_eq!(ctx.deliveries(ep_gone).await.len(), 1);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_receiver_slower_than_the_timeout_is_retried(pool: PgPool) {
    let ctx = setup(&pool);
    let receiver = TestServer::start_script(vec![
        Reply::Delay(Duration::from_secs(5)),
        status(200, "ok"),
    ])
    .await;
    let (ep, secret) = ctx
        .endpoint_with(
            TENANT,
            &url(&receiver),
            &["*"],
            &[100],
            Some(Duration::from_millis(500)),
        )
        .await;
    send(&pool, TENANT, "invoice.paid", json!({})).await;
    ctx.drain().await;
    let delivered = ctx.deliveries(ep).await;
    let delivery = one(&delivered);
    assert_eq!(
        (delivery.state.as_str(), delivery.attempt),
        ("completed", 2)
    );
    let requests = receiver.requests();
    assert_eq!(requests.len(), 2);
    verify(&requests[1], &secret).unwrap();
    let first_error: String = sqlx::query_scalar(
        "SELECT error FROM sluice.job_attempts WHERE job_id = $1 AND attempt = 1",
    )
    .bind(delivery.id)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert!(first_error.contains("timeout"), "{first_error}");
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn the_endpoint_is_read_at_send_time(pool: PgPool) {
    let ctx = setup(&pool);
    let (old, new) = (
        TestServer::start(status(200, "old")).await,
        TestServer::start(status(200, "new")).await,
    );
    let (moved, secret) = ctx.endpoint(&url(&old), &["*"], &[]).await;
    let (deleted, _) = ctx.endpoint(&url(&old), &["*"], &[]).await;
    let (disabled, _) = ctx.endpoint(&url(&old), &["*"], &[]).await;
    let (narrowed, _) = ctx.endpoint(&url(&old), &["invoice.*"], &[]).await;
    send(&pool, TENANT, "invoice.paid", json!({"v": 1})).await;

    // Between the enqueue and the send: edit, delete, disable, narrow.
    let to_new = EndpointUpdate {
        url: Some(url(&new)),
        ..EndpointUpdate::default()
    };
    ctx.store
        .update_webhook_endpoint(TENANT, moved, &to_new)
        .await
        .unwrap();
    ctx.store
        .delete_webhook_endpoint(TENANT, deleted)
        .await
        .unwrap();
    let off = EndpointUpdate {
        enabled: Some(false),
        ..EndpointUpdate::default()
    };
    ctx.store
        .update_webhook_endpoint(TENANT, disabled, &off)
        .await
        .unwrap();
    let narrow = EndpointUpdate {
        events: Some(vec!["user.*".into()]),
        ..EndpointUpdate::default()
    };
    ctx.store
        .update_webhook_endpoint(TENANT, narrowed, &narrow)
        .await
        .unwrap();
    ctx.drain().await;

    assert_eq!(old.accepts(), 0, "nothing goes to the old URL");
    let requests = new.requests();
    assert_eq!(requests.len(), 1);
    verify(&requests[0], &secret).unwrap();
    let jobs: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT state::text, last_error FROM sluice.jobs WHERE job_type = 'sluice.webhook' ORDER BY id",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(jobs[0].0, "completed");
    assert_eq!(jobs[1].0, "cancelled");
    assert!(
        jobs[1].1.as_deref().unwrap().contains("was deleted"),
        "{jobs:?}"
    );
    assert_eq!(jobs[2].0, "cancelled");
    assert!(
        jobs[2].1.as_deref().unwrap().contains("disabled"),
        "{jobs:?}"
    );
    assert_eq!(jobs[3].0, "cancelled");
    assert!(
        jobs[3]
            .1
            .as_deref()
            .unwrap()
            .contains("no longer subscribes"),
        "{jobs:?}"
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_rolled_back_send_delivers_nothing(pool: PgPool) {
    let ctx = setup(&pool);
    let receiver = TestServer::start(status(200, "ok")).await;
    let (ep, _) = ctx.endpoint(&url(&receiver), &["*"], &[]).await;
    let mut tx = pool.begin().await.unwrap();
    sqlx::query("CREATE TABLE IF NOT EXISTS invoices (id int)")
        .execute(&mut *tx)
        .await
        .unwrap();
    let _: i64 =
        sqlx::query_scalar("SELECT sluice.send_event('acme', 'invoice.paid', '{\"id\": 1}')")
            .fetch_one(&mut *tx)
            .await
            .unwrap();
    tx.rollback().await.unwrap();
    let counts: (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM sluice.jobs), (SELECT count(*) FROM sluice.webhook_events)",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(counts, (0, 0));
    // The same call committed: one delivery, sent.
    let key: Option<&str> = Some("invoice-1-paid");
    let first: i64 =
        sqlx::query_scalar("SELECT sluice.send_event('acme', 'invoice.paid', '{\"id\": 1}', $1)")
            .bind(key)
            .fetch_one(&pool)
            .await
            .unwrap();
    let again = ctx
        .store
        .send_event(TENANT, "invoice.paid", &json!({"id": 1}), key)
        .await
        .unwrap();
    assert_eq!(first, again, "one idempotency key, one event");
    ctx.drain().await;
    assert_eq!(receiver.requests().len(), 1);
    assert_eq!(ctx.deliveries(ep).await.len(), 1);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn after_rotation_both_secrets_sign_each_request(pool: PgPool) {
    let ctx = setup(&pool);
    let receiver = TestServer::start(status(200, "ok")).await;
    let (ep, old_secret) = ctx.endpoint(&url(&receiver), &["*"], &[]).await;
    let (info, new_secret) = rotate_secret(
        &ctx.store,
        Some(&ctx.keyring),
        TENANT,
        ep,
        Duration::from_secs(3600),
    )
    .await
    .unwrap();
    assert_ne!(old_secret, new_secret);
    assert!(info.previous_until.is_some());
    send(&pool, TENANT, "invoice.paid", json!({})).await;
    ctx.drain().await;
    let requests = receiver.requests();
    assert_eq!(requests.len(), 1);
    let signatures = requests[0].header("webhook-signature").unwrap();
    assert_eq!(signatures.split(' ').count(), 2, "{signatures}");
    verify(&requests[0], &old_secret).expect("the old secret still verifies");
    verify(&requests[0], &new_secret).expect("the new secret verifies");
    assert!(verify(&requests[0], "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_err());
    // No grace: only the newest secret signs from now on.
    let (_, newest) = rotate_secret(&ctx.store, Some(&ctx.keyring), TENANT, ep, Duration::ZERO)
        .await
        .unwrap();
    send(&pool, TENANT, "invoice.paid", json!({})).await;
    ctx.drain().await;
    let requests = receiver.requests();
    assert_eq!(requests.len(), 2);
    let last = &requests[1];
    assert_eq!(
        last.header("webhook-signature").unwrap().split(' ').count(),
        1
    );
    verify(last, &newest).expect("the newest secret verifies");
    assert!(
        verify(last, &new_secret).is_err(),
        "a secret rotated out without grace no longer signs"
    );
}
