//! Reading and steering jobs: `GET /v1/jobs/{id}`, the keyset-paged list, cancel and
//! retry, with their 400 / 404 / 409 answers.

use serde_json::json;
use sqlx::PgPool;

use crate::support::http::{Api, error_of, json};

async fn enqueue(api: &Api, token: &str, n: i64) -> i64 {
    let (status, body) = json(
        api.post(
            "/v1/jobs",
            token,
            json!({"type": "echo", "payload": {"n": n}}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    body["id"].as_i64().unwrap()
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn jobs_are_listed_newest_first_page_by_page(pool: PgPool) {
    let api = Api::start(&pool).await;
    let token = api.tenant("acme").await;
    api.job_type("acme", "echo", "echo").await;
    let mut ids = Vec::new();
    for n in 0..5 {
        ids.push(enqueue(&api, &token, n).await);
    }
    ids.reverse();

    let mut seen = Vec::new();
    let mut path = "/v1/jobs?limit=2&state=pending&type=echo".to_owned();
    loop {
        let (status, page) = json(api.get(&path, &token).await).await;
        assert_eq!(status, 200, "{page}");
        for job in page["jobs"].as_array().unwrap() {
            assert!(job.get("payload").is_none(), "lists carry no payload");
            seen.push(job["id"].as_i64().unwrap());
        }
        match page["next_cursor"].as_str() {
            Some(cursor) => {
                path = format!("/v1/jobs?limit=2&state=pending&type=echo&cursor={cursor}")
            }
            None => break,
        }
        assert!(seen.len() <= 5, "paging does not end: {seen:?}");
    }
    assert_eq!(seen, ids);

    let (status, page) = json(api.get("/v1/jobs?state=dead", &token).await).await;
    assert_eq!(status, 200);
    assert_eq!(page["jobs"].as_array().unwrap().len(), 0);

    for (query, field) in [
        ("state=finished", "state"),
        ("cursor=abc", "cursor"),
        ("limit=0", "limit"),
        ("limit=many", "limit"),
        ("colour=red", "colour"),
    ] {
        let (status, body) = json(api.get(&format!("/v1/jobs?{query}"), &token).await).await;
        assert_eq!(status, 400, "{query}: {body}");
        assert!(error_of(&body).1.contains(field), "{query}: {body}");
    }
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_job_is_read_cancelled_and_retried(pool: PgPool) {
    let api = Api::start(&pool).await;
    let token = api.tenant("acme").await;
    api.job_type("acme", "echo", "echo").await;
    let id = enqueue(&api, &token, 7).await;

    let (status, job) = json(api.get(&format!("/v1/jobs/{id}"), &token).await).await;
    assert_eq!(status, 200);
    assert_eq!(job["payload"], json!({"n": 7}));
    assert_eq!(job["tenant"], "acme");

    // Retry of a pending job: 409.
    let (status, body) = json(
        api.post(&format!("/v1/jobs/{id}/retry"), &token, json!({}))
            .await,
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(error_of(&body).0, "conflict");

    let (status, job) = json(
        api.post(&format!("/v1/jobs/{id}/cancel"), &token, json!({}))
            .await,
    )
    .await;
    assert_eq!(status, 200, "{job}");
    assert_eq!(job["state"], "cancelled");
    // Cancelling a finished job: 409.
    let (status, body) = json(
        api.post(&format!("/v1/jobs/{id}/cancel"), &token, json!({}))
            .await,
    )
    .await;
    assert_eq!(status, 409, "{body}");

    let (status, job) = json(
        api.post(&format!("/v1/jobs/{id}/retry"), &token, json!({}))
            .await,
    )
    .await;
    assert_eq!(status, 200, "{job}");
    assert_eq!(job["state"], "pending");
    assert_eq!(job["attempt"], 0);

    let (status, body) = json(api.get("/v1/jobs/999999", &token).await).await;
    assert_eq!(status, 404);
    assert_eq!(error_of(&body).0, "not_found");
    for path in ["/v1/jobs/999999/cancel", "/v1/jobs/999999/retry"] {
        let (status, _) = json(api.post(path, &token, json!({})).await).await;
        assert_eq!(status, 404, "{path}");
    }
    let (status, body) = json(api.get("/v1/jobs/seven", &token).await).await;
    assert_eq!(status, 400, "{body}");
    error_of(&body);
}
