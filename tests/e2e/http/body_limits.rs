//! A declared body over the route's limit is refused before it is read (issue #44,
//! finding 6): a client that sends headers declaring a huge `Content-Length` and then
//! nothing gets 413 `payload_too_large` at once, on every kind of route (JSON, batch,
//! component upload with its own larger limit, dashboard form), instead of holding the
//! connection until the body timeout. A body within the limit still goes through.

use std::time::Duration;

use reqwest::Method;
use serde_json::json;
use sqlx::PgPool;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::http::{Api, ENV_ADMIN_TOKEN, error_of, job_count, json};
use crate::support::sample;

/// The JSON and form limit of the server under test.
const MAX_REQUEST_BODY: usize = 16 << 10;

/// Sends the head of a request declaring `length` body bytes and no body, then reads
/// the answer's status line and body. The body timeout is far longer than the wait
/// here, so an answer proves the server did not wait for the body.
async fn declare_only(api: &Api, method: &str, path: &str, token: &str, length: u64) -> String {
    let address = api.base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {address}\r\nauthorization: Bearer {token}\r\n\
         content-type: application/json\r\ncontent-length: {length}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    let read = tokio::time::timeout(Duration::from_secs(20), async {
        // Until the whole JSON error body is in (or the server closes).
        loop {
            let n = stream.read(&mut chunk).await.unwrap_or(0);
            answer.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&answer);
            if n == 0 || text.contains("\"}}") {
                break;
            }
        }
    })
    .await;
    let text = String::from_utf8_lossy(&answer).into_owned();
    assert!(
        read.is_ok(),
        "{method} {path}: no answer while the declared body was not sent (got {text:?})"
    );
    text
}

/// The JSON error body of a raw answer.
fn error_body(answer: &str) -> serde_json::Value {
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not a JSON body ({e}): {answer:?}"))
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_declared_body_over_the_routes_limit_is_refused_before_it_is_read(pool: PgPool) {
    let api = Api::start_with(
        &pool,
        sluice_http::app_state::ServeConfig {
            admin_token: Some(ENV_ADMIN_TOKEN.into()),
            max_request_body: MAX_REQUEST_BODY,
            default_max_component_bytes: 8 << 20,
            body_timeout: Duration::from_secs(600),
            ..sluice_http::app_state::ServeConfig::default()
        },
    )
    .await;
    let token = api.tenant("acme").await;
    api.job_type("acme", "echo", "echo").await;
    let huge = 100 << 20;
    for (method, path) in [
        ("POST", "/v1/jobs"),
        ("POST", "/v1/jobs:batch"),
        ("POST", "/v1/schedules"),
        ("PUT", "/v1/job-types/echo"),
        ("POST", "/v1/events"),
        ("PUT", "/v1/components/echo"),
        ("POST", "/ui/login"),
    ] {
        let answer = declare_only(&api, method, path, &token, huge).await;
        assert!(
            answer.starts_with("HTTP/1.1 413"),
            "{method} {path}: {answer}"
        );
        let (code, message) = error_of(&error_body(&answer));
        assert_eq!(code, "payload_too_large", "{method} {path}");
        assert!(message.contains(&huge.to_string()), "{message}");
    }
    assert_eq!(job_count(&pool, "acme").await, 0);

    // Uploads have their own, larger limit: the tenant's component limit, not the JSON
    // one. A declared length between the two is not refused up front; a body within
    // it is stored.
    let echo = std::fs::read(sample("echo")).unwrap();
    assert!(
        echo.len() > MAX_REQUEST_BODY,
        "the sample is over the JSON limit"
    );
    let response = api
        .req(Method::PUT, "/v1/components/big", &token)
        .body(echo)
        .send()
        .await
        .unwrap();
    let (status, body) = json(response).await;
    assert_eq!(status, 200, "{body}");
    let answer = declare_only(&api, "PUT", "/v1/components/big", &token, (8 << 20) + 1).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(
        error_of(&error_body(&answer)).1.contains("component limit"),
        "{answer}"
    );

    // Within the limit, a JSON body still goes through.
    let response = api
        .post(
            "/v1/jobs",
            &token,
            json!({"type": "echo", "payload": {"n": 1}}),
        )
        .await;
    assert_eq!(response.status(), 201);
}
