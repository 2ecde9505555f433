//! `sluice:task/secrets` from a real guest (`sample-tasks/bearer-call`, contract 0.2): a
//! granted value reaches the guest (which sends it to a server on 127.0.0.1) and is
//! masked as `[secret NAME]` in the report's logs and failure reason; an ungranted name is
//! `not-granted`, a granted one without a value `not-found` with a WARN line.

use std::sync::Arc;

use crate::common::http_server::TestServer;
use crate::common::*;
use sluice_egress::{AllowList, Grant, NetworkPolicy};
use sluice_sandbox::{
    CancellationToken, EgressConfig, Grants, HttpGrant, RunReport, Sandbox, SandboxConfig,
    SecretGrant,
};

const VALUE: &str = "tok_9f8e7d6c5b4a";

async fn call(sandbox: &Sandbox, payload: serde_json::Value, grants: Grants) -> RunReport {
    let component = prepare(sandbox, "bearer-call");
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

fn secrets() -> Option<Arc<SecretGrant>> {
    Some(Arc::new(SecretGrant::new([
        ("API_TOKEN".to_owned(), Some(VALUE.to_owned())),
        ("UNSET".to_owned(), None),
    ])))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_granted_value_is_used_and_masked_in_logs_and_errors() {
    let server = TestServer::start().await;
    let sandbox = Sandbox::new(SandboxConfig {
        egress: EgressConfig {
            networks: NetworkPolicy::parse(["127.0.0.1/32"]).unwrap(),
            ..EgressConfig::default()
        },
        ..config()
    })
    .unwrap();
    let loopback = NetworkPolicy::parse(["127.0.0.1/32"]).unwrap();
    let http = Arc::new(HttpGrant {
        grant: Grant::new(AllowList::parse_with([server.origin()], &loopback).unwrap()),
        max_requests: 5,
        recorded: None,
    });
    let grants = Grants {
        http: Some(http),
        secrets: secrets(),
        ..Grants::default()
    };
    let url = server.url("/ok");
    let done = call(
        &sandbox,
        serde_json::json!({ "secret": "API_TOKEN", "url": url }),
        grants.clone(),
    )
    .await;
    assert_eq!(output(&done), br#"{"status":200}"#);
    let logs = String::from_utf8_lossy(&done.logs);
    assert!(logs.contains("with token [secret API_TOKEN]"), "{logs}");
    assert!(
        logs.contains("[stdout] stdout also sees [secret API_TOKEN]"),
        "{logs}"
    );
    assert!(!logs.contains(VALUE), "{logs}");
    let failed = call(
        &sandbox,
        serde_json::json!({ "secret": "API_TOKEN", "url": url, "fail": true }),
        grants,
    )
    .await;
    let why = reason(&failed);
    assert!(
        why.starts_with("guest retry: ") && why.contains("token [secret API_TOKEN]"),
        "{why}"
    );
    assert!(!why.contains(VALUE), "{why}");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn ungranted_names_are_not_granted_and_unset_ones_not_found() {
    let sandbox = sandbox();
    let url = "http://127.0.0.1:9/";
    for (grants, name, expected) in [
        (
            Grants::default(),
            "API_TOKEN",
            "secret API_TOKEN: not-granted",
        ),
        (
            Grants {
                secrets: secrets(),
                ..Grants::default()
            },
            "OTHER",
            "secret OTHER: not-granted",
        ),
        (
            Grants {
                secrets: secrets(),
                ..Grants::default()
            },
            "UNSET",
            "secret UNSET: not-found",
        ),
    ] {
        let report = call(
            &sandbox,
            serde_json::json!({ "secret": name, "url": url }),
            grants,
        )
        .await;
        let why = reason(&report);
        assert!(
            why.starts_with("guest fatal: ") && why.contains(expected),
            "{why}"
        );
        let logs = String::from_utf8_lossy(&report.logs);
        assert_eq!(
            logs.contains("WARN] secret UNSET is granted but not set"),
            name == "UNSET",
            "{logs}"
        );
    }
}
