//! The client's loops and headers against a scripted local server: enqueue's `created`,
//! the token and tenant headers, `wait`'s chunks and its timeout, paging by cursor, an
//! error answer, no server at all.

use std::time::Duration;

use serde_json::{Value, json};

use super::mock_server::{MockServer, Scripted};
use crate::{Client, Enqueue, Error, ErrorCode, JobState, ListParams};

/// A job as `GET /v1/jobs/{id}` shows it.
fn job(id: i64, state: &str) -> Value {
    json!({
        "id": id, "tenant": "default", "type": "echo", "state": state, "priority": 10,
        "run_at": "2030-01-01T00:00:00Z", "attempt": 0, "max_attempts": 3,
        "idempotency_key": null, "key_scope": "retained", "cancel_requested": false,
        "last_error": null, "payload": {"n": 1}, "output": null,
        "created_at": "2030-01-01T00:00:00Z", "updated_at": "2030-01-01T00:00:00Z",
        "finished_at": null, "parent_id": null, "children": [], "children_count": 0,
        "concurrency_key": null, "held": null, "waiting_for": null, "awaited": null,
        "snoozes": 0,
    })
}

/// A job as `GET /v1/jobs` lists it.
fn item(id: i64) -> Value {
    json!({
        "id": id, "type": "echo", "state": "pending", "priority": 10,
        "run_at": "2030-01-01T00:00:00Z", "attempt": 0, "max_attempts": 3,
        "idempotency_key": null, "last_error": null, "payload_size": 2,
        "output_size": null, "created_at": "2030-01-01T00:00:00Z", "finished_at": null,
        "parent_id": null,
    })
}

#[tokio::test]
async fn enqueue_sends_the_token_and_tenant_and_reads_created() {
    let server = MockServer::start(vec![
        Scripted::json(201, job(7, "pending")),
        Scripted::json(200, job(7, "pending")),
    ]);
    let client = Client::new(&server.url, "sluice_tok")
        .unwrap()
        .with_tenant("acme");
    let job = || Enqueue::new("echo", json!({"n": 1})).idempotency_key("k");
    let first = client.enqueue(job()).await.unwrap();
    let second = client.enqueue(job()).await.unwrap();
    assert!(first.created && !second.created);
    assert_eq!((first.job.id, second.job.id), (7, 7));
    let requests = server.requests();
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].target, "/v1/jobs");
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sluice_tok")
    );
    assert_eq!(requests[0].header("x-sluice-tenant"), Some("acme"));
    assert_eq!(requests[0].header("content-type"), Some("application/json"));
    let body: Value = serde_json::from_str(&requests[0].body).unwrap();
    assert_eq!(
        body,
        json!({"type": "echo", "payload": {"n": 1}, "idempotency_key": "k"})
    );
}

#[tokio::test]
async fn wait_asks_in_chunks_of_a_minute_until_the_job_is_finished() {
    let mut done = job(5, "completed");
    done["output"] = json!({"n": 1});
    let server = MockServer::start(vec![
        Scripted::json(200, job(5, "running")),
        Scripted::json(200, done),
    ]);
    let client = Client::new(&server.url, "t").unwrap();
    let finished = client.wait(5, Duration::from_secs(90)).await.unwrap();
    assert_eq!(finished.state, JobState::Completed);
    assert_eq!(finished.output, json!({"n": 1}));
    let targets: Vec<String> = server.requests().into_iter().map(|r| r.target).collect();
    assert_eq!(targets, ["/v1/jobs/5?wait=1m", "/v1/jobs/5?wait=1m"]);
}

#[tokio::test]
async fn wait_past_its_timeout_is_a_timeout_error_with_the_job() {
    let script = (0..20)
        .map(|_| Scripted::json(200, job(9, "pending")))
        .collect();
    let server = MockServer::start(script);
    let client = Client::new(&server.url, "t").unwrap();
    let error = client
        .wait(9, Duration::from_millis(300))
        .await
        .unwrap_err();
    match &error {
        Error::Timeout { job, waited } => {
            assert_eq!(job.id, 9);
            assert_eq!(job.state, JobState::Pending);
            assert!(*waited >= Duration::from_millis(300), "{waited:?}");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        error.to_string().contains("job 9 is still pending"),
        "{error}"
    );
    let requests = server.requests();
    assert_eq!(requests[0].target, "/v1/jobs/9?wait=300ms");
    assert!(requests.len() <= 4, "it spun: {} requests", requests.len());
}

#[tokio::test]
async fn pages_follow_next_cursor_to_the_last_page() {
    let server = MockServer::start(vec![
        Scripted::json(200, json!({"jobs": [item(9), item(8)], "next_cursor": "8"})),
        Scripted::json(200, json!({"jobs": [item(3)], "next_cursor": null})),
    ]);
    let client = Client::new(&server.url, "t").unwrap();
    let params = ListParams::default().state(JobState::Pending).limit(2);
    let jobs = client.list_all(params).await.unwrap();
    assert_eq!(jobs.iter().map(|j| j.id).collect::<Vec<_>>(), [9, 8, 3]);
    let targets: Vec<String> = server.requests().into_iter().map(|r| r.target).collect();
    assert_eq!(
        targets,
        [
            "/v1/jobs?state=pending&limit=2",
            "/v1/jobs?state=pending&cursor=8&limit=2"
        ]
    );
}

#[tokio::test]
async fn an_error_answer_is_a_typed_error() {
    let server = MockServer::start(vec![
        Scripted::json(
            503,
            json!({"error": {"code": "unavailable", "message": "the database does not answer"}}),
        )
        .header("retry-after", "1"),
    ]);
    let client = Client::new(&server.url, "t").unwrap();
    let error = client.get(1).await.unwrap_err();
    assert_eq!(error.code(), Some(&ErrorCode::Unavailable));
    assert_eq!(error.status(), Some(503));
    assert_eq!(error.retry_after(), Some(Duration::from_secs(1)));
    assert!(error.is_retryable());
}

#[tokio::test]
async fn no_server_is_a_transport_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let client = Client::new(&format!("http://127.0.0.1:{port}"), "t").unwrap();
    let error = client.get(1).await.unwrap_err();
    assert!(matches!(error, Error::Transport(_)), "{error:?}");
    assert!(error.is_retryable());
    let message = error.to_string();
    let url = format!("no answer from http://127.0.0.1:{port}/v1/jobs/1: ");
    assert!(message.starts_with(&url), "{message}");
    assert!(message.to_lowercase().contains("refused"), "{message}");
}
