//! `/v1/schedules`: create (bad cron, time zone and job type refused, each named; a taken
//! name is a 409), list, show, pause, resume, delete — scoped to the caller's tenant.

use reqwest::Method;
use serde_json::json;
use sqlx::PgPool;

use crate::support::http::{Api, error_of, json};

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn schedules_are_managed_over_http_within_one_tenant(pool: PgPool) {
    let api = Api::start(&pool).await;
    let acme = api.tenant("acme").await;
    let globex = api.tenant("globex").await;
    api.job_type("acme", "report", "echo").await;
    let create = |body: serde_json::Value| api.post("/v1/schedules", &acme, body);

    let (status, body) =
        json(create(json!({"name": "n", "cron": "61 * * * *", "type": "report"})).await).await;
    assert_eq!(status, 400, "{body}");
    assert!(error_of(&body).1.contains("cron"), "{body}");
    let (status, body) = json(
        create(json!({"name": "n", "cron": "* * * * *", "tz": "Mars/Olympus", "type": "report"}))
            .await,
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(error_of(&body).1.contains("Mars/Olympus"), "{body}");
    let (status, body) =
        json(create(json!({"name": "n", "cron": "* * * * *", "type": "nope"})).await).await;
    assert_eq!(status, 404, "{body}");

    let (status, body) = json(
        create(json!({
            "name": "nightly", "cron": "0 3 * * *", "tz": "Europe/Paris", "type": "report",
            "payload": {"kind": "daily"}, "priority": "high", "jitter": "30s",
            "catch_up": "all", "max_catch_up": 3
        }))
        .await,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["tz"], "Europe/Paris");
    assert_eq!(body["catch_up"], "all");
    assert!(body["next_slot"].is_string(), "{body}");
    // A taken name is a conflict with what exists, not a malformed request.
    let (status, body) =
        json(create(json!({"name": "nightly", "cron": "* * * * *", "type": "report"})).await).await;
    assert_eq!(status, 409, "{body}");
    let (code, message) = error_of(&body);
    assert_eq!(code, "conflict");
    assert!(message.contains("already exists"), "{message}");

    let (status, body) = json(api.get("/v1/schedules", &acme).await).await;
    assert_eq!(status, 200);
    assert_eq!(body.as_array().unwrap().len(), 1);
    // Another tenant sees nothing and cannot touch it.
    let (status, body) = json(api.get("/v1/schedules", &globex).await).await;
    assert_eq!((status, body.as_array().unwrap().len()), (200, 0));
    let (status, _) = json(api.get("/v1/schedules/nightly", &globex).await).await;
    assert_eq!(status, 404);
    let (status, _) = json(
        api.post("/v1/schedules/nightly/pause", &globex, json!({}))
            .await,
    )
    .await;
    assert_eq!(status, 404);

    let (status, body) = json(
        api.post("/v1/schedules/nightly/pause", &acme, json!({}))
            .await,
    )
    .await;
    assert_eq!((status, body["paused"].as_bool()), (200, Some(true)));
    let (status, body) = json(
        api.post("/v1/schedules/nightly/resume", &acme, json!({}))
            .await,
    )
    .await;
    assert_eq!((status, body["paused"].as_bool()), (200, Some(false)));

    let deleted = api
        .req(Method::DELETE, "/v1/schedules/nightly", &acme)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status().as_u16(), 204);
    let (status, body) = json(api.get("/v1/schedules/nightly", &acme).await).await;
    assert_eq!(status, 404, "{body}");
}
