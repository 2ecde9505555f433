//! The body caps of a grant as real guests see them, through the sandbox's egress hooks
//! and the one connector against a server on 127.0.0.1: the `wasi:http` `error-code` of
//! each cap (`docs/egress.md`) — a chunked response cut mid-stream (`http-get`, which
//! names the code in its failure) and a request body over the cap (`post-json`).

use std::sync::Arc;

use crate::common::http_server::TestServer;
use crate::common::*;
use sluice_egress::{AllowList, Grant, NetworkPolicy};
use sluice_sandbox::{
    CancellationToken, EgressConfig, Grants, HttpGrant, RunReport, Sandbox, SandboxConfig,
};

/// A sandbox with 127.0.0.1 opened, running sample `name` under a grant of `server`
/// whose caps `cap` sets.
async fn run_capped(
    name: &str,
    payload: serde_json::Value,
    server: &TestServer,
    cap: impl FnOnce(&mut Grant),
) -> RunReport {
    let loopback = NetworkPolicy::parse(["127.0.0.1/32"]).unwrap();
    let sandbox = Sandbox::new(SandboxConfig {
        egress: EgressConfig {
            networks: loopback.clone(),
            ..EgressConfig::default()
        },
        ..config()
    })
    .unwrap();
    let mut grant = Grant::new(AllowList::parse_with(&[server.origin()], &loopback).unwrap());
    cap(&mut grant);
    let http = Some(Arc::new(HttpGrant {
        grant,
        max_requests: 10,
        recorded: None,
    }));
    let component = prepare(&sandbox, name);
    let grants = Grants {
        http,
        ..Grants::default()
    };
    sandbox
        .run_with(
            &component,
            job(&payload.to_string()),
            &limits(),
            grants,
            CancellationToken::new(),
        )
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chunked_response_over_the_cap_is_a_response_body_size_error() {
    let server = TestServer::start().await;
    let payload = serde_json::json!({ "url": server.url("/chunked") });
    let report = run_capped("http-get", payload, &server, |g| {
        g.limits.max_response_body_bytes = 1024;
    })
    .await;
    // Not `internal-error`: the guest reads the code of the failed body stream.
    assert!(
        reason(&report).contains("HTTP request failed: HTTP-response-body-size "),
        "{}",
        reason(&report)
    );
    // Under the cap the same response is read whole.
    let payload = serde_json::json!({ "url": server.url("/chunked") });
    let report = run_capped("http-get", payload, &server, |_| {}).await;
    let out: serde_json::Value = serde_json::from_slice(output(&report)).unwrap();
    assert_eq!(out["body_bytes"], 64 * 1024);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_body_over_the_cap_is_a_request_body_size_error() {
    let server = TestServer::start().await;
    let document = serde_json::json!({ "memo": "x".repeat(64 * 1024) });
    let payload = serde_json::json!({ "url": server.url("/ok"), "document": document });
    let report = run_capped("post-json", payload, &server, |g| {
        g.limits.max_request_body_bytes = 1024;
    })
    .await;
    // Not `connection-terminated`: the body's stream closes, the response says why.
    assert!(
        reason(&report).contains("HTTP request failed: HTTP-request-body-size "),
        "{}",
        reason(&report)
    );
    assert_eq!(server.accepted(), 0, "refused before connecting");
}
