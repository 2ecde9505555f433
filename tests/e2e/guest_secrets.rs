//! Secrets read by tasks written in Python, C, JavaScript and Go, through the real `sluice`
//! binary and worker against a real Postgres, with the guest SDKs' helpers
//! (`get_secret`, `sluice_secret_get`, `getSecret`, `task.Secret`) in components built from source by
//! `scripts/build-guests`.
//!
//! Python, C and Go `bearer-call` read a secret and POST a JSON body with it as a bearer token
//! (issue #17: a POST with a body and request headers from their HTTP helpers): servers on
//! 127.0.0.1 receive the token, `content-type`, a `content-length` matching the body (not
//! `transfer-encoding: chunked`) and the body intact; a 4xx answer ends the job `fatal`, a
//! 5xx one as a retry; a name the type is not granted ends it naming `not-granted`; and
//! what the host keeps (the worker's log of the guest's log line and stdout, `last_error`,
//! the output) shows `[secret NAME]`, never the value. JavaScript and Go `secret-echo` (no
//! HTTP in QuickJS) log and return the value they read, both masked, and report
//! `not-found` for a granted name not set.

mod trace_logs;

use std::time::Instant;

use crate::egress_support::{Recorded, Reply, TestServer};
use crate::support::secrets::{self, new_key, set_secret};
use crate::support::{Sluice, enqueue, output, show};
use serde_json::{Value, json};
use sqlx::PgPool;

/// The operator's opening for the test servers, and nothing else.
const LOOPBACK: &str = "127.0.0.1/32";
/// The secret's value: it must reach the servers and nothing the host keeps.
const VALUE: &str = "sk_live_51HcQ9aZ2guestvalue";
/// The body `bearer-call` sends, in every language.
const BODY: &str = r#"{"amount":42,"memo":"café ✓"}"#;

fn last_error(job: &Value) -> &str {
    job["last_error"].as_str().unwrap_or_default()
}

/// `sluice worker --drain` with the key, open to the test servers; returns its log.
fn drain(sluice: &Sluice, key: &str) -> String {
    let started = Instant::now();
    let log = secrets::drain(sluice, key, LOOPBACK);
    eprintln!("worker drained in {:?}", started.elapsed());
    log
}

/// A server answering every request with `status`, on its own runtime thread.
fn server(runtime: &tokio::runtime::Runtime, status: u16) -> TestServer {
    let reply = Reply::Respond {
        status,
        headers: vec![],
        body: b"{}".to_vec(),
    };
    let handle = runtime.handle().clone();
    std::thread::spawn(move || handle.block_on(TestServer::start(reply)))
        .join()
        .unwrap()
}

fn origin(server: &TestServer) -> String {
    format!("http://127.0.0.1:{}", server.port())
}

/// What `bearer-call` must have sent: a POST with the token, the JSON body and its length.
fn assert_bearer_post(lang: &str, request: &Recorded) {
    let what = format!("{lang}: {request:?}");
    assert_eq!(request.method, "POST", "{what}");
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {VALUE}").as_str()),
        "{what}"
    );
    assert_eq!(
        request.header("content-type"),
        Some("application/json"),
        "{what}"
    );
    assert_eq!(request.header("transfer-encoding"), None, "{what}");
    let length = request.body.len().to_string();
    assert_eq!(
        request.header("content-length"),
        Some(length.as_str()),
        "{what}"
    );
    let body: Value = serde_json::from_slice(&request.body)
        .unwrap_or_else(|e| panic!("{lang}: the body is not JSON ({e}): {what}"));
    assert_eq!(body, serde_json::from_str::<Value>(BODY).unwrap(), "{what}");
}

async fn bearer_call(pool: &PgPool, lang: &str) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (ok, refused, down) = (
        server(&runtime, 200),
        server(&runtime, 400),
        server(&runtime, 503),
    );
    let sluice = Sluice::for_guests(pool);
    let key = new_key();
    let origins = [origin(&ok), origin(&refused), origin(&down)];
    let mut grants = vec!["--egress-allow-network", LOOPBACK, "--max-attempts", "1"];
    for origin in &origins {
        grants.extend(["--allow-http", origin.as_str()]);
    }
    grants.extend(["--secret", "API_TOKEN"]);
    sluice.define_guest(lang, "bearer-call", "call", &grants);
    set_secret(&sluice, &key, "default", "API_TOKEN", VALUE);

    let call = |origin: &str, secret: &str, fail: bool| {
        let url = format!("{origin}/charge");
        let payload = json!({ "secret": secret, "url": url, "fail": fail });
        enqueue(&sluice, "call", payload)
    };
    let sent = call(&origins[0], "API_TOKEN", false);
    let failing = call(&origins[0], "API_TOKEN", true);
    let rejected = call(&origins[1], "API_TOKEN", false);
    let unavailable = call(&origins[2], "API_TOKEN", false);
    let ungranted = call(&origins[0], "OTHER", false);
    let log = drain(&sluice, &key);

    let job = show(&sluice, &sent);
    assert_eq!(job["state"], "completed", "{lang}: {job}");
    assert_eq!(output(&job), json!({ "status": 200 }), "{lang}");
    // `fail`: a retryable error holding the value, masked in last_error.
    let job = show(&sluice, &failing);
    assert_eq!(job["state"], "dead", "{lang}: {job}");
    assert!(
        last_error(&job).starts_with("guest retry: ")
            && last_error(&job).ends_with("answered 200 to token [secret API_TOKEN]"),
        "{lang}: {job}"
    );
    let job = show(&sluice, &rejected);
    assert!(
        last_error(&job).starts_with("guest fatal: ") && last_error(&job).contains("answered 400"),
        "{lang}: {job}"
    );
    let job = show(&sluice, &unavailable);
    assert!(
        last_error(&job).starts_with("guest retry: ") && last_error(&job).contains("answered 503"),
        "{lang}: {job}"
    );
    let job = show(&sluice, &ungranted);
    assert_eq!(job["state"], "dead", "{lang}: {job}");
    assert!(
        last_error(&job).starts_with("guest fatal: secret OTHER: not-granted"),
        "{lang}: {job}"
    );

    // Each server saw the POSTs meant for it (the ungranted job sent none), intact.
    let counts = [ok.requests(), refused.requests(), down.requests()].map(|r| r.len());
    assert_eq!(counts, [2, 1, 1], "{lang}: requests per server");
    for request in [ok.requests(), refused.requests(), down.requests()].concat() {
        assert_bearer_post(lang, &request);
    }
    // The guest's log line and stdout reached the worker's log masked, and nothing else
    // the host printed holds the value.
    assert!(
        log.contains("with token [secret API_TOKEN]"),
        "{lang}: {log}"
    );
    assert!(
        log.contains("stdout also sees [secret API_TOKEN]"),
        "{lang}: {log}"
    );
    assert!(!log.contains(VALUE), "{lang}: {log}");
    runtime.shutdown_background();
}

#[sqlx::test(migrations = false)]
async fn python_bearer_call_posts_its_secret_and_the_host_masks_it(pool: PgPool) {
    bearer_call(&pool, "python").await;
}

#[sqlx::test(migrations = false)]
async fn c_bearer_call_posts_its_secret_and_the_host_masks_it(pool: PgPool) {
    bearer_call(&pool, "c").await;
}

#[sqlx::test(migrations = false)]
async fn go_bearer_call_posts_its_secret_and_the_host_masks_it(pool: PgPool) {
    bearer_call(&pool, "go").await;
}

#[sqlx::test(migrations = false)]
async fn javascript_reads_a_secret_that_the_host_masks(pool: PgPool) {
    secret_echo(&pool, "js").await;
}

#[sqlx::test(migrations = false)]
async fn go_reads_a_secret_that_the_host_masks(pool: PgPool) {
    secret_echo(&pool, "go").await;
}

/// `secret-echo` (JavaScript, Go): the value read is returned and logged, and kept masked;
/// a granted name not set is `not-found` (the guest completes saying so), an ungranted
/// one `not-granted` (the guest's error is fatal). Go's also prints the value to stdout.
async fn secret_echo(pool: &PgPool, lang: &str) {
    let sluice = Sluice::for_guests(pool);
    let key = new_key();
    let grants = [
        "--max-attempts",
        "1",
        "--secret",
        "API_TOKEN",
        "--secret",
        "NOT_SET_YET",
    ];
    sluice.define_guest(lang, "secret-echo", "echo-secret", &grants);
    set_secret(&sluice, &key, "default", "API_TOKEN", VALUE);
    let read = enqueue(&sluice, "echo-secret", json!({ "secret": "API_TOKEN" }));
    let unset = enqueue(&sluice, "echo-secret", json!({ "secret": "NOT_SET_YET" }));
    let ungranted = enqueue(&sluice, "echo-secret", json!({ "secret": "OTHER" }));
    let log = drain(&sluice, &key);

    // The value was read (the output held it) and is kept masked.
    let job = show(&sluice, &read);
    assert_eq!(job["state"], "completed", "{lang}: {job}");
    assert_eq!(
        output(&job),
        json!({ "found": true, "value": "[secret API_TOKEN]" }),
        "{lang}"
    );
    let job = show(&sluice, &unset);
    assert_eq!(job["state"], "completed", "{lang}: {job}");
    assert_eq!(
        output(&job),
        json!({ "found": false, "code": "not-found" }),
        "{lang}"
    );
    let job = show(&sluice, &ungranted);
    assert_eq!(job["state"], "dead", "{lang}: {job}");
    assert!(
        last_error(&job).starts_with("guest fatal: secret OTHER: not-granted"),
        "{lang}: {job}"
    );
    assert!(
        log.contains("read API_TOKEN: [secret API_TOKEN]"),
        "{lang}: {log}"
    );
    assert!(
        log.contains("secret NOT_SET_YET is granted but not set"),
        "{lang}: {log}"
    );
    if lang == "go" {
        assert!(
            log.contains("stdout also sees [secret API_TOKEN]"),
            "{lang}: {log}"
        );
    }
    assert!(!log.contains(VALUE), "{lang}: {log}");
}
