//! `POST /v1/jobs` and `POST /v1/jobs:batch`: every status, idempotency, and the rate
//! limit. A refused request stores nothing.

use reqwest::Method;
use serde_json::json;
use sluice_store::TenantLimits;
use sqlx::PgPool;

use crate::support::http::{Api, error_of, job_count, json};

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn enqueue_answers_201_then_200_for_a_duplicate_key(pool: PgPool) {
    let api = Api::start(&pool).await;
    let token = api.tenant("acme").await;
    api.job_type("acme", "echo", "echo").await;

    let body = json!({"type": "echo", "payload": {"to": "ada"}, "priority": "high",
                      "idempotency_key": "welcome-ada", "max_attempts": 2});
    let (status, created) = json(api.post("/v1/jobs", &token, body.clone()).await).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["state"], "pending");
    assert_eq!(created["type"], "echo");
    assert_eq!(created["payload"], json!({"to": "ada"}));
    assert_eq!(created["priority"], 20);
    assert_eq!(created["max_attempts"], 2);

    let (status, again) = json(api.post("/v1/jobs", &token, body).await).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["id"], created["id"]);
    assert_eq!(job_count(&pool, "acme").await, 1);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn bad_requests_are_refused_with_the_field_named_and_nothing_stored(pool: PgPool) {
    let api = Api::start(&pool).await;
    let token = api.tenant("acme").await;
    api.job_type("acme", "echo", "echo").await;

    // Malformed JSON.
    let response = api
        .req(Method::POST, "/v1/jobs", &token)
        .header("content-type", "application/json")
        .body("{\"type\": \"echo\",")
        .send()
        .await
        .unwrap();
    let (status, body) = json(response).await;
    assert_eq!(status, 400);
    let (code, message) = error_of(&body);
    assert_eq!(code, "invalid_request");
    assert!(
        message.contains("EOF") || message.contains("line 1"),
        "{message}"
    );

    // Fields: each message names its field.
    let cases = [
        (json!({"payload": {}}), "type"),
        (json!({"type": "echo", "priority": "urgent"}), "priority"),
        (json!({"type": "echo", "max_attempts": 0}), "max_attempts"),
        (json!({"type": "echo", "delay": "soon"}), "delay"),
        (json!({"type": "echo", "run_at": "tomorrow"}), "run_at"),
        (
            json!({"type": "echo", "idempotency_key": ""}),
            "idempotency_key",
        ),
        (json!({"type": "echo", "prio": 3}), "prio"),
    ];
    for (request, field) in cases {
        let (status, body) = json(api.post("/v1/jobs", &token, request.clone()).await).await;
        assert_eq!(status, 400, "{request} → {body}");
        let (_, message) = error_of(&body);
        assert!(
            message.contains(field),
            "{request}: {message:?} should name {field}"
        );
    }

    // Unknown job type: 404.
    let (status, body) = json(
        api.post("/v1/jobs", &token, json!({"type": "no-such-type"}))
            .await,
    )
    .await;
    assert_eq!(status, 404, "{body}");
    let (code, message) = error_of(&body);
    assert_eq!(code, "job_type_not_found");
    assert!(message.contains("no-such-type"), "{message}");

    // Payload over the tenant's limit: 413.
    api.set_limits(
        "acme",
        TenantLimits {
            max_payload_bytes: Some(64),
            ..TenantLimits::default()
        },
    )
    .await;
    let big = "x".repeat(100);
    let (status, body) = json(
        api.post("/v1/jobs", &token, json!({"type": "echo", "payload": big}))
            .await,
    )
    .await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(error_of(&body).0, "payload_too_large");

    assert_eq!(
        job_count(&pool, "acme").await,
        0,
        "no refused job is stored"
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn fifty_concurrent_posts_with_one_key_create_one_job(pool: PgPool) {
    let api = Api::start(&pool).await;
    let token = api.tenant("acme").await;
    api.job_type("acme", "echo", "echo").await;

    let body = json!({"type": "echo", "idempotency_key": "once"});
    let responses = futures::future::join_all(
        (0..50).map(|_| async { json(api.post("/v1/jobs", &token, body.clone()).await).await }),
    )
    .await;
    let created = responses.iter().filter(|(s, _)| *s == 201).count();
    let duplicates = responses.iter().filter(|(s, _)| *s == 200).count();
    assert_eq!((created, duplicates), (1, 49), "{responses:?}");
    let ids: std::collections::HashSet<i64> = responses
        .iter()
        .map(|(_, b)| b["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids.len(), 1, "every answer names the same job");
    assert_eq!(job_count(&pool, "acme").await, 1);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_batch_is_enqueued_whole_or_not_at_all(pool: PgPool) {
    let api = Api::start(&pool).await;
    let token = api.tenant("acme").await;
    api.job_type("acme", "echo", "echo").await;

    let (status, body) = json(
        api.post(
            "/v1/jobs:batch",
            &token,
            json!({"jobs": [
                {"type": "echo", "payload": {"n": 1}},
                {"type": "echo", "payload": {"n": 2}, "idempotency_key": "k"},
                {"type": "echo", "payload": {"n": 3}, "idempotency_key": "k"},
            ]}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let jobs = body["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 3);
    assert_eq!(jobs[1]["id"], jobs[2]["id"], "one key, one job");
    assert_eq!(jobs[2]["created"], false);
    assert_eq!(job_count(&pool, "acme").await, 2);

    // One bad row: 400 naming it, nothing stored.
    let (status, body) = json(
        api.post(
            "/v1/jobs:batch",
            &token,
            json!({"jobs": [{"type": "echo"}, {"type": "echo", "priority": "urgent"}]}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(error_of(&body).1.contains("jobs[1].priority"), "{body}");
    // One unknown type: 404, nothing stored.
    let (status, body) = json(
        api.post(
            "/v1/jobs:batch",
            &token,
            json!({"jobs": [{"type": "echo"}, {"type": "nope"}]}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 404, "{body}");
    let (status, _) = json(
        api.post("/v1/jobs:batch", &token, json!({"jobs": []}))
            .await,
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(job_count(&pool, "acme").await, 2);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_burst_over_the_rate_gets_429_and_refused_jobs_are_not_stored(pool: PgPool) {
    let api = Api::start(&pool).await;
    let token = api.tenant("acme").await;
    api.job_type("acme", "echo", "echo").await;
    // One job per 100 s after a burst of 3: no refill can happen during the test.
    api.set_limits(
        "acme",
        TenantLimits {
            max_enqueue_per_sec: Some(0.01),
            enqueue_burst: Some(3),
            ..TenantLimits::default()
        },
    )
    .await;

    let mut accepted = 0;
    let mut refused = 0;
    for n in 0..10 {
        let response = api
            .post(
                "/v1/jobs",
                &token,
                json!({"type": "echo", "payload": {"n": n}}),
            )
            .await;
        let retry_after = response
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().parse::<u64>().unwrap());
        let (status, body) = json(response).await;
        match status {
            201 => accepted += 1,
            429 => {
                refused += 1;
                assert_eq!(error_of(&body).0, "rate_limited");
                assert!(
                    retry_after.is_some_and(|s| s >= 1),
                    "Retry-After: {retry_after:?}"
                );
            }
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert_eq!((accepted, refused), (3, 7));
    let (status, body) = json(
        api.post(
            "/v1/jobs:batch",
            &token,
            json!({"jobs": [{"type": "echo"}, {"type": "echo"}]}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(
        job_count(&pool, "acme").await,
        3,
        "refused jobs are not stored"
    );

    // Another tenant has its own bucket.
    let other = api.tenant("globex").await;
    api.job_type("globex", "echo", "echo").await;
    let (status, _) = json(api.post("/v1/jobs", &other, json!({"type": "echo"})).await).await;
    assert_eq!(status, 201);
}
