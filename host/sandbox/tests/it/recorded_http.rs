//! Recorded HTTP (`HttpGrant::recorded`, what `sluice test` grants): a real guest's
//! requests (`sample-tasks/http-get`, `post-json`) answered from a table of recorded
//! responses, matched by method and URL, with nothing sent: the URLs name a host that
//! does not resolve and the sandbox opens no network, so any real send would fail.

use std::sync::Arc;

use crate::common::*;
use sluice_sandbox::{
    CancellationToken, Grants, HttpGrant, Outcome, RecordedHttp, RecordedResponse, RunReport,
};

fn recorded(responses: Vec<RecordedResponse>) -> Arc<HttpGrant> {
    Arc::new(HttpGrant {
        max_requests: 10,
        recorded: Some(Arc::new(RecordedHttp { responses })),
        ..HttpGrant::default()
    })
}

fn response(method: &str, url: &str, status: u16, body: &str) -> RecordedResponse {
    RecordedResponse {
        method: method.into(),
        url: url.into(),
        status,
        headers: vec![("content-type".into(), "text/plain".into())],
        body: body.as_bytes().to_vec(),
    }
}

async fn run_recorded(
    name: &str,
    payload: serde_json::Value,
    responses: Vec<RecordedResponse>,
) -> RunReport {
    let sandbox = sandbox();
    let component = prepare(&sandbox, name);
    sandbox
        .run_with(
            &component,
            job(&payload.to_string()),
            &limits(),
            Grants {
                http: Some(recorded(responses)),
                ..Grants::default()
            },
            CancellationToken::new(),
        )
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_recorded_response_answers_the_request_and_nothing_is_sent() {
    let report = run_recorded(
        "http-get",
        serde_json::json!({ "url": "http://api.example.invalid/x" }),
        vec![
            response("POST", "http://api.example.invalid/x", 500, "wrong method"),
            response("GET", "http://api.example.invalid/x", 200, "recorded body"),
        ],
    )
    .await;
    let out: serde_json::Value = serde_json::from_slice(output(&report)).unwrap();
    assert_eq!(out["status"], 200);
    assert_eq!(out["body_head"], "recorded body");
    assert_eq!(out["body_bytes"], 13);
    assert_eq!(report.http.calls.len(), 1);
    assert_eq!(report.http.calls[0].outcome, "ok");
    assert_eq!(report.http.bytes_in, 13);
    assert!(report.http.unmatched.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn repeated_requests_use_the_recorded_responses_in_order() {
    let url = "http://api.example.invalid/poll";
    let report = run_recorded(
        "http-get",
        serde_json::json!({ "url": url, "times": 2 }),
        vec![
            response("GET", url, 503, "busy"),
            response("GET", url, 200, "done"),
        ],
    )
    .await;
    let out: serde_json::Value = serde_json::from_slice(output(&report)).unwrap();
    assert_eq!(out["status"], 200);
    assert_eq!(out["body_head"], "done");
    assert_eq!(out["requests"], 2);
    // A third request would find both used.
    let report = run_recorded(
        "http-get",
        serde_json::json!({ "url": url, "times": 3 }),
        vec![
            response("GET", url, 503, "busy"),
            response("GET", url, 200, "done"),
        ],
    )
    .await;
    assert_eq!(report.http.unmatched, vec![format!("GET {url}")]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_with_no_recording_fails_and_is_named_in_the_report() {
    let report = run_recorded(
        "http-get",
        serde_json::json!({ "url": "http://api.example.invalid/missing?q=1" }),
        vec![response(
            "GET",
            "http://api.example.invalid/other",
            200,
            "x",
        )],
    )
    .await;
    assert!(
        matches!(report.outcome, Outcome::Failed(_)),
        "{:?}",
        report.outcome
    );
    assert!(
        reason(&report).contains("HTTP-request-denied"),
        "{}",
        reason(&report)
    );
    assert_eq!(
        report.http.unmatched,
        vec!["GET http://api.example.invalid/missing?q=1".to_owned()]
    );
    assert_eq!(report.http.calls[0].outcome, "denied");
    let logs = String::from_utf8_lossy(&report.logs);
    assert!(
        logs.contains("no recorded response for GET http://api.example.invalid/missing?q=1"),
        "{logs}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_posted_document_gets_its_recorded_answer() {
    let url = "https://billing.example.invalid/v1/invoices";
    let mut created = response("POST", url, 201, r#"{"id":"inv_1"}"#);
    created.headers = vec![("content-type".into(), "application/json".into())];
    let report = run_recorded(
        "post-json",
        serde_json::json!({ "url": url, "document": { "total": 10 } }),
        vec![created],
    )
    .await;
    let out: serde_json::Value = serde_json::from_slice(output(&report)).unwrap();
    assert_eq!(out["status"], 201);
    assert_eq!(out["response"]["id"], "inv_1");
    assert!(report.http.bytes_out > 0);
}
