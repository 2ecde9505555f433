//! `PUT /v1/components/{name}` (validated by the real sandbox, size-limited per tenant)
//! and `PUT /v1/job-types/{type}` (refused above the tenant's caps).

use reqwest::Method;
use serde_json::json;
use sluice_store::TenantLimits;
use sqlx::PgPool;

use crate::support::http::{Api, error_of, json};
use crate::support::sample;

async fn upload(api: &Api, token: &str, path: &str, bytes: Vec<u8>) -> (u16, serde_json::Value) {
    json(
        api.req(Method::PUT, path, token)
            .header("content-type", "application/wasm")
            .body(bytes)
            .send()
            .await
            .unwrap(),
    )
    .await
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn components_are_validated_and_size_limited_per_tenant(pool: PgPool) {
    let api = Api::start(&pool).await;
    let token = api.tenant("acme").await;
    let echo = std::fs::read(sample("echo")).unwrap();

    let (status, body) = upload(&api, &token, "/v1/components/echo?version=v1", echo.clone()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["version"], "v1");
    assert_eq!(body["sha256"].as_str().unwrap().len(), 64);
    assert_eq!(body["size"], echo.len());

    let (status, body) = upload(&api, &token, "/v1/components/junk", b"not wasm".to_vec()).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(error_of(&body).0, "invalid_component");
    let (status, body) = upload(&api, &token, "/v1/components/empty", Vec::new()).await;
    assert_eq!(status, 400, "{body}");

    api.set_limits(
        "acme",
        TenantLimits {
            max_component_bytes: Some(1000),
            max_fuel: Some(1_000_000),
            max_memory_bytes: Some(64 << 20),
            ..TenantLimits::default()
        },
    )
    .await;
    let (status, body) = upload(&api, &token, "/v1/components/echo2", echo).await;
    assert_eq!(status, 413, "{body}");
    assert!(error_of(&body).1.contains("1000"), "{body}");

    let (_, list) = json(api.get("/v1/components", &token).await).await;
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo"], "refused uploads are not stored");

    // Job types: above a cap is refused naming the cap; within it is stored.
    let put_type = |body: serde_json::Value| {
        api.req(Method::PUT, "/v1/job-types/greet", &token)
            .json(&body)
            .send()
    };
    let (status, body) = json(
        put_type(json!({"component": "echo@v1", "fuel": 2_000_000}))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(error_of(&body).1.contains("max_fuel"), "{body}");
    let (status, body) = json(
        put_type(json!({"component": "echo", "memory_bytes": 128u64 << 20}))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(error_of(&body).1.contains("max_memory_bytes"), "{body}");
    let (status, body) = json(put_type(json!({"component": "echo@v9"})).await.unwrap()).await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = json(
        put_type(json!({"component": "echo", "fuel": "lots"}))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(error_of(&body).1.contains("fuel"), "{body}");
    let (status, body) = json(
        put_type(json!({"component": "echo@v1", "fuel": 500_000, "max_attempts": 5}))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["max_attempts"], 5);
    let (_, types) = json(api.get("/v1/job-types", &token).await).await;
    assert_eq!(types[0]["name"], "greet");
    assert_eq!(types[0]["fuel"], 500_000);

    let (status, job) = json(api.post("/v1/jobs", &token, json!({"type": "greet"})).await).await;
    assert_eq!(status, 201, "{job}");
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_job_type_is_granted_http_destinations_checked_and_normalised(pool: PgPool) {
    let api = Api::start(&pool).await;
    let token = api.tenant("acme").await;
    let http_get = std::fs::read(sample("http-get")).unwrap();
    let (status, body) = upload(&api, &token, "/v1/components/fetch", http_get).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["contract"], "sluice:task@0.2.0", "{body}");
    let put_type = |body: serde_json::Value| {
        api.req(Method::PUT, "/v1/job-types/fetch", &token)
            .json(&body)
            .send()
    };
    for bad in [
        "ftp://x.example.com",
        "https://",
        "https://*.",
        "https://api.example.com/v1",
        "http://169.254.169.254",
        "http://[::1]:8080",
    ] {
        let (status, body) = json(
            put_type(json!({"component": "fetch", "allow_http": [bad]}))
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, 400, "{bad}: {body}");
        let message = error_of(&body).1;
        assert!(
            message.contains("allow_http") && message.contains(bad),
            "{bad}: {message}"
        );
    }
    let (_, types) = json(api.get("/v1/job-types", &token).await).await;
    assert_eq!(types, json!([]), "nothing stored");

    let (status, body) = json(
        put_type(json!({
            "component": "fetch",
            "allow_http": ["HTTPS://API.example.com", "https://*.example.org:8443"],
            "http_max_requests": 3,
            "http_max_response_bytes": 4096,
            "http_connect_timeout_ms": 1500
        }))
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["allow_http"],
        json!(["https://api.example.com:443", "https://*.example.org:8443"])
    );
    assert_eq!(
        (
            body["http_max_requests"].as_i64(),
            body["http_max_response_bytes"].as_i64()
        ),
        (Some(3), Some(4096))
    );
    assert_eq!(body["http_connect_timeout_ms"], 1500);
    assert_eq!(body["http_first_byte_timeout_ms"], serde_json::Value::Null);
    let (status, body) = json(
        put_type(json!({"component": "fetch", "http_first_byte_timeout_ms": 0}))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        error_of(&body).1.contains("http_first_byte_timeout"),
        "{body}"
    );

    // Above the tenant's cap: refused naming it.
    api.set_limits(
        "acme",
        TenantLimits {
            max_http_requests: Some(2),
            ..TenantLimits::default()
        },
    )
    .await;
    let (status, body) = json(
        put_type(json!({"component": "fetch", "allow_http": ["https://api.example.com"], "http_max_requests": 3}))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(error_of(&body).1.contains("max_http_requests"), "{body}");
}
