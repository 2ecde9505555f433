//! Outbound HTTP from a real guest (`sample-tasks/http-get`, contract 0.2) through the
//! sandbox's egress hooks and the one connector, against a server on 127.0.0.1 opened
//! with the operator's network flag (`EgressConfig::networks`) — and refused without it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::http_server::TestServer;
use crate::common::*;
use sluice_egress::{AllowList, Grant, NetworkPolicy};
use sluice_sandbox::{
    CancellationToken, Contract, EgressConfig, Grants, HttpGrant, Limits, RunReport, Sandbox,
    SandboxConfig, ValidationError,
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
fn grant(entries: &[String], max_requests: u32) -> Arc<HttpGrant> {
    let loopback = NetworkPolicy::parse(["127.0.0.1/32"]).unwrap();
    Arc::new(HttpGrant {
        grant: Grant::new(AllowList::parse_with(entries, &loopback).unwrap()),
        max_requests,
        recorded: None,
    })
}

async fn get(
    sandbox: &Sandbox,
    payload: serde_json::Value,
    limits: &Limits,
    http: Option<Arc<HttpGrant>>,
) -> RunReport {
    let component = prepare(sandbox, "http-get");
    assert_eq!(component.contract(), Contract::V0_2);
    sandbox
        .run_with(
            &component,
            job(&payload.to_string()),
            limits,
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

#[tokio::test(flavor = "multi_thread")]
async fn a_granted_request_reaches_the_server_and_the_guest_sees_the_answer() {
    let server = TestServer::start().await;
    let sandbox = sandbox_opening(&["127.0.0.1/32"]);
    let url = server.url("/ok");
    let report = get(
        &sandbox,
        serde_json::json!({ "url": url }),
        &limits(),
        Some(grant(&[server.origin()], 10)),
    )
    .await;
    let out: serde_json::Value = serde_json::from_slice(output(&report)).unwrap();
    assert_eq!(out["status"], 200);
    assert_eq!(out["body_bytes"], 5);
    assert_eq!(out["body_head"], "hello");
    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str()),
        ("GET", "/ok")
    );
    assert_eq!(seen[0].host, server.addr.to_string());
    assert_eq!(report.http.calls.len(), 1);
    assert_eq!(report.http.calls[0].outcome, "ok");
    assert_eq!(report.http.bytes_in, 5);
}

#[tokio::test(flavor = "multi_thread")]
async fn refusals_are_error_codes_the_guest_sees_and_the_server_sees_nothing() {
    let server = TestServer::start().await;
    let other = TestServer::start().await;
    let opened = sandbox_opening(&["127.0.0.1/32"]);
    let closed = sandbox_opening(&[]);
    let url = server.url("/ok");
    let payload = serde_json::json!({ "url": url });
    let cases: Vec<(&Sandbox, Option<Arc<HttpGrant>>, &str)> = vec![
        // The job type is granted nothing.
        (&opened, None, "HTTP-request-denied"),
        // Another destination is granted (same host, other port).
        (
            &opened,
            Some(grant(&[other.origin()], 10)),
            "HTTP-request-denied",
        ),
        // Granted, but loopback is not opened by the operator.
        (
            &closed,
            Some(grant(&[server.origin()], 10)),
            "destination-IP-prohibited",
        ),
        // Granted and opened, but the attempt may make no request.
        (
            &opened,
            Some(grant(&[server.origin()], 0)),
            "HTTP-request-denied",
        ),
    ];
    for (sandbox, http, code) in cases {
        let report = get(sandbox, payload.clone(), &limits(), http).await;
        let why = reason(&report);
        assert!(
            why.starts_with("guest fatal:") && why.contains(code),
            "{why}"
        );
        assert!(logs(&report).contains("egress denied"), "{}", logs(&report));
        assert_eq!(report.http.calls.len(), 1);
        assert_eq!(report.http.calls[0].outcome, "denied");
    }
    // Non-http schemes and `localhost` without the operator flag are refused too.
    let ftp = serde_json::json!({ "url": "ftp://127.0.0.1/x" });
    let report = get(&opened, ftp, &limits(), Some(grant(&[server.origin()], 10))).await;
    assert!(
        reason(&report).contains("HTTP-request-denied"),
        "{}",
        reason(&report)
    );
    let localhost = format!("http://localhost:{}", server.addr.port());
    let report = get(
        &closed,
        serde_json::json!({ "url": format!("{localhost}/ok") }),
        &limits(),
        Some(grant(std::slice::from_ref(&localhost), 10)),
    )
    .await;
    assert!(
        reason(&report).contains("destination-IP-prohibited"),
        "{}",
        reason(&report)
    );
    assert_eq!(server.accepted(), 0, "the server saw a connection");
    assert_eq!(other.accepted(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_past_the_per_attempt_count_are_refused() {
    let server = TestServer::start().await;
    let sandbox = sandbox_opening(&["127.0.0.1/32"]);
    let payload = serde_json::json!({ "url": server.url("/ok"), "times": 3 });
    let report = get(
        &sandbox,
        payload,
        &limits(),
        Some(grant(&[server.origin()], 2)),
    )
    .await;
    let why = reason(&report);
    assert!(why.contains("HTTP-request-denied"), "{why}");
    assert!(
        logs(&report).contains("limit of 2 requests per attempt"),
        "{}",
        logs(&report)
    );
    assert_eq!(server.requests().len(), 2);
    let outcomes: Vec<_> = report.http.calls.iter().map(|c| c.outcome).collect();
    assert_eq!(outcomes, ["ok", "ok", "denied"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_server_ends_the_attempt_at_its_timeout_and_the_connection_is_closed() {
    let server = TestServer::start().await;
    let sandbox = sandbox_opening(&["127.0.0.1/32"]);
    let limits = Limits {
        timeout: Some(Duration::from_millis(300)),
        ..limits()
    };
    let started = Instant::now();
    let payload = serde_json::json!({ "url": server.url("/slow") });
    let report = get(
        &sandbox,
        payload,
        &limits,
        Some(grant(&[server.origin()], 10)),
    )
    .await;
    assert_eq!(reason(&report), "timeout (300ms)");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    // The server notices the client hang up.
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.hung_up() == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(server.hung_up(), 1, "the request's connection stayed open");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_response_over_the_cap_is_a_size_error_and_redirects_are_not_followed() {
    let server = TestServer::start().await;
    let sandbox = sandbox_opening(&["127.0.0.1/32"]);
    let mut capped = grant(&[server.origin()], 10).as_ref().clone();
    capped.grant.limits.max_response_body_bytes = 1 << 20;
    let payload = serde_json::json!({ "url": server.url("/big") });
    let report = get(&sandbox, payload, &limits(), Some(Arc::new(capped))).await;
    assert!(
        reason(&report).contains("HTTP-response-body-size"),
        "{}",
        reason(&report)
    );

    let payload = serde_json::json!({ "url": server.url("/redirect") });
    let report = get(
        &sandbox,
        payload,
        &limits(),
        Some(grant(&[server.origin()], 10)),
    )
    .await;
    let out: serde_json::Value = serde_json::from_slice(output(&report)).unwrap();
    assert_eq!(out["status"], 302);
    let paths: Vec<_> = server.requests().into_iter().map(|s| s.path).collect();
    assert_eq!(paths, ["/big", "/redirect"]);
}

#[test]
fn a_host_limited_to_0_1_refuses_0_2_components_by_name_and_runs_0_1_ones() {
    let old = Sandbox::new(SandboxConfig {
        max_contract: Contract::V0_1,
        ..config()
    })
    .unwrap();
    let err = old.validate(&sample("http-get"), 50 << 20).unwrap_err();
    assert!(
        matches!(
            &err,
            ValidationError::ContractUnsupported {
                needs: Contract::V0_2,
                supported: Contract::V0_1,
                import,
            } if import.starts_with("wasi:http/")
        ),
        "{err}"
    );
    assert!(err.to_string().contains("task contract 0.2"), "{err}");
    let echo = old.validate(&sample("echo"), 50 << 20).unwrap();
    assert_eq!(echo.contract, Contract::V0_1);
    let new = sandbox();
    assert_eq!(
        new.validate(&sample("http-get"), 50 << 20)
            .unwrap()
            .contract,
        Contract::V0_2
    );
}
