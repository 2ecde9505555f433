//! Outbound HTTP from the `http-get` samples written in other guest languages
//! (`sample-tasks/<lang>/http-get*`, built by `scripts/build-guests` into
//! `sample-tasks/<lang>/build/http-get.wasm`), through the sandbox's egress hooks against a
//! server on 127.0.0.1 opened with the operator's network flag: the same payload and output
//! as the Rust sample (`egress.rs`), a refusal the guest sees as a `wasi:http`
//! error code while the server sees nothing, and an upload over the grant's request-body
//! cap seen as `HTTP-request-body-size` (the code the Rust SDK gives, `egress_caps.rs`).
//!
//! JavaScript's is built with componentize-js (StarlingMonkey; componentize-qjs 0.4.5 cannot
//! build a component that imports `wasi:http`, docs/guests/javascript.md), and is also run
//! through StarlingMonkey's own `fetch` from an async handler. Go's is built with the SDK's
//! contract 0.2 files (`-tags sluice_0_2`: wit-bindgen-go's bindings, docs/guests/go.md).

use std::sync::Arc;

use crate::common::http_server::TestServer;
use crate::common::*;
use sluice_egress::{AllowList, Grant, NetworkPolicy};
use sluice_sandbox::{
    CancellationToken, Contract, EgressConfig, Grants, HttpGrant, RunReport, Sandbox, SandboxConfig,
};

fn sandbox_opening(networks: &[&str]) -> Sandbox {
    Sandbox::new(SandboxConfig {
        egress: EgressConfig {
            networks: NetworkPolicy::parse(networks).unwrap(),
            ..EgressConfig::default()
        },
        ..config()
    })
    .unwrap()
}

/// A grant of `entries`, which name 127.0.0.1 (an IP literal an allow list takes only
/// where the operator opened it).
fn grant(entries: &[String]) -> Arc<HttpGrant> {
    let loopback = NetworkPolicy::parse(["127.0.0.1/32"]).unwrap();
    Arc::new(HttpGrant {
        grant: Grant::new(AllowList::parse_with(entries, &loopback).unwrap()),
        max_requests: 10,
        recorded: None,
    })
}

/// Checks `lang`'s component the way an upload does: validation refuses imports this host
/// does not provide (`sluice:task/secrets`, `sluice:task/jobs`), so a toolchain that keeps
/// unused world imports fails here, naming the import.
fn validate(sandbox: &Sandbox, lang: &str) {
    let info = sandbox
        .validate(&guest(lang, "http-get"), 100 << 20)
        .unwrap_or_else(|e| panic!("{lang}/http-get is refused: {e}"));
    assert_eq!(info.contract, Contract::V0_2, "{lang}");
}

async fn get(
    sandbox: &Sandbox,
    lang: &str,
    payload: serde_json::Value,
    http: Option<Arc<HttpGrant>>,
) -> RunReport {
    let component = prepare_guest(sandbox, lang, "http-get");
    assert_eq!(component.contract(), Contract::V0_2, "{lang}");
    sandbox
        .run_with(
            &component,
            job(&payload.to_string()),
            &limits(),
            Grants {
                http,
                ..Grants::default()
            },
            CancellationToken::new(),
        )
        .await
}

fn logs(report: &RunReport) -> String {
    String::from_utf8_lossy(&report.logs).into_owned()
}

/// A granted request reaches the server; the guest completes with the Rust sample's output.
async fn a_granted_request_is_answered(lang: &str) {
    let server = TestServer::start().await;
    let sandbox = sandbox_opening(&["127.0.0.1/32"]);
    validate(&sandbox, lang);
    let payload = serde_json::json!({ "url": server.url("/ok"), "timeout_ms": 5000 });
    let report = get(&sandbox, lang, payload, Some(grant(&[server.origin()]))).await;
    let out: serde_json::Value = serde_json::from_slice(output(&report))
        .unwrap_or_else(|e| panic!("{lang}: output is not JSON ({e}); logs:\n{}", logs(&report)));
    assert_eq!(out["status"], 200, "{lang}: {out}");
    assert_eq!(out["body_bytes"], 5, "{lang}: {out}");
    assert_eq!(out["body_head"], "hello", "{lang}: {out}");
    assert_eq!(out["requests"], 1, "{lang}: {out}");
    let seen = server.requests();
    assert_eq!(seen.len(), 1, "{lang}: {seen:?}");
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str()),
        ("GET", "/ok"),
        "{lang}"
    );
    assert_eq!(seen[0].host, server.addr.to_string(), "{lang}");
    assert_eq!(report.http.calls.len(), 1, "{lang}");
    assert_eq!(report.http.calls[0].outcome, "ok", "{lang}");
    assert_eq!(report.http.bytes_in, 5, "{lang}");
}

/// Refusals fail the job `fatal`, naming the `wasi:http` error code; the server sees nothing.
async fn refusals_name_the_error_code(lang: &str) {
    let server = TestServer::start().await;
    let other = TestServer::start().await;
    let opened = sandbox_opening(&["127.0.0.1/32"]);
    let closed = sandbox_opening(&[]);
    let payload = serde_json::json!({ "url": server.url("/ok") });
    let cases: Vec<(&Sandbox, Option<Arc<HttpGrant>>, &str)> = vec![
        // The job type is granted nothing.
        (&opened, None, "HTTP-request-denied"),
        // Another destination is granted (same host, other port).
        (
            &opened,
            Some(grant(&[other.origin()])),
            "HTTP-request-denied",
        ),
        // Granted, but loopback is not opened by the operator.
        (
            &closed,
            Some(grant(&[server.origin()])),
            "destination-IP-prohibited",
        ),
    ];
    for (sandbox, http, code) in cases {
        let report = get(sandbox, lang, payload.clone(), http).await;
        let why = reason(&report);
        eprintln!("{lang}, expecting {code}: {why}");
        assert!(
            why.starts_with("guest fatal:") && why.contains(code),
            "{lang}: expected a fatal error naming {code}, got `{why}`; logs:\n{}",
            logs(&report)
        );
        assert!(
            logs(&report).contains("egress denied"),
            "{lang}: {}",
            logs(&report)
        );
        assert_eq!(report.http.calls.len(), 1, "{lang}");
        assert_eq!(report.http.calls[0].outcome, "denied", "{lang}");
    }
    assert_eq!(server.accepted(), 0, "{lang}: the server saw a connection");
    assert_eq!(
        other.accepted(),
        0,
        "{lang}: the other server saw a connection"
    );
}

/// A request body over the grant's cap fails the job naming `HTTP-request-body-size`: the
/// host closes the body's stream and the helper reports the response's code, not the closed
/// stream (`connection-terminated`). A body whose length is declared (the Python, C and Go
/// helpers declare it) is refused before connecting; JavaScript's is sent chunked, and
/// fails once the count passes the cap.
async fn a_request_body_over_the_cap_is_a_request_body_size_error(lang: &str, declared: bool) {
    let server = TestServer::start().await;
    let sandbox = sandbox_opening(&["127.0.0.1/32"]);
    let mut capped = grant(&[server.origin()]);
    Arc::get_mut(&mut capped)
        .unwrap()
        .grant
        .limits
        .max_request_body_bytes = 1024;
    let payload = serde_json::json!({ "url": server.url("/ok"), "upload_bytes": 64 * 1024 });
    let report = get(&sandbox, lang, payload, Some(capped)).await;
    let why = reason(&report);
    assert!(
        why.starts_with("guest fatal:")
            && why.contains("HTTP request failed: HTTP-request-body-size "),
        "{lang}: expected a fatal error naming HTTP-request-body-size, got `{why}`; logs:\n{}",
        logs(&report)
    );
    assert_eq!(report.http.calls.len(), 1, "{lang}");
    assert_eq!(report.http.calls[0].outcome, "denied", "{lang}");
    if declared {
        assert_eq!(server.accepted(), 0, "{lang}: refused before connecting");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn python_http_get_reaches_a_granted_server() {
    a_granted_request_is_answered("python").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_http_get_refusals_are_error_codes() {
    refusals_name_the_error_code("python").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_request_body_over_the_cap_is_its_size_error() {
    a_request_body_over_the_cap_is_a_request_body_size_error("python", true).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn c_http_get_reaches_a_granted_server() {
    a_granted_request_is_answered("c").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn c_http_get_refusals_are_error_codes() {
    refusals_name_the_error_code("c").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn c_request_body_over_the_cap_is_its_size_error() {
    a_request_body_over_the_cap_is_a_request_body_size_error("c", true).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn go_http_get_reaches_a_granted_server() {
    a_granted_request_is_answered("go").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn go_http_get_refusals_are_error_codes() {
    refusals_name_the_error_code("go").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn go_request_body_over_the_cap_is_its_size_error() {
    a_request_body_over_the_cap_is_a_request_body_size_error("go", true).await;
}

/// JavaScript's checks run in one test, one after the other: its component is ≈ 13 MB, and
/// parallel tests would each compile it (a cold cache is missed by all of them at once).
#[tokio::test(flavor = "multi_thread")]
async fn javascript_http_get_and_fetch_go_through_the_egress_policy() {
    a_granted_request_is_answered("js").await;
    refusals_name_the_error_code("js").await;
    a_request_body_over_the_cap_is_a_request_body_size_error("js", false).await;
    fetch_goes_through_the_same_egress_policy().await;
}

/// StarlingMonkey's global `fetch`, awaited in an async handler, rides on the same
/// `wasi:http` import: a granted request is answered (the engine runs the event loop until
/// `run`'s Promise settles), and a refusal still fails the job, though `fetch` reports no
/// error code (which is why guest-sdk/js/sluice-http.js exists).
async fn fetch_goes_through_the_same_egress_policy() {
    let server = TestServer::start().await;
    let sandbox = sandbox_opening(&["127.0.0.1/32"]);
    let payload = serde_json::json!({ "url": server.url("/ok"), "via": "fetch", "times": 2 });
    let report = get(&sandbox, "js", payload, Some(grant(&[server.origin()]))).await;
    let out: serde_json::Value = serde_json::from_slice(output(&report))
        .unwrap_or_else(|e| panic!("output is not JSON ({e}); logs:\n{}", logs(&report)));
    assert_eq!(out["status"], 200, "{out}");
    assert_eq!(out["body_bytes"], 5, "{out}");
    assert_eq!(out["body_head"], "hello", "{out}");
    assert_eq!(out["requests"], 2, "{out}");
    assert_eq!(server.requests().len(), 2);
    assert_eq!(report.http.calls.len(), 2);

    let payload = serde_json::json!({ "url": server.url("/ok"), "via": "fetch" });
    let report = get(&sandbox, "js", payload, None).await;
    let why = reason(&report);
    assert!(
        why.starts_with("guest fatal: fetch failed: TypeError"),
        "expected the sample's fatal fetch error, got `{why}`; logs:\n{}",
        logs(&report)
    );
    assert!(logs(&report).contains("egress denied"), "{}", logs(&report));
    assert_eq!(report.http.calls[0].outcome, "denied");
    assert_eq!(
        server.requests().len(),
        2,
        "the refused fetch reached the server"
    );
}

/// The SDK files that gained the HTTP client still build contract 0.1 components (the
/// other samples stay on `wit/`), and those still run.
#[tokio::test(flavor = "multi_thread")]
async fn the_0_1_samples_built_with_the_same_sdk_files_still_run() {
    let sandbox = sandbox();
    for lang in ["python", "c", "go"] {
        let component = prepare_guest(&sandbox, lang, "echo");
        assert_eq!(component.contract(), Contract::V0_1, "{lang}");
        let report = sandbox
            .run(
                &component,
                job("still 0.1"),
                &limits(),
                CancellationToken::new(),
            )
            .await;
        assert_eq!(output(&report), b"still 0.1", "{lang}");
    }
}
