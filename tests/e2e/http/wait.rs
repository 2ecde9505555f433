//! `GET /v1/jobs/{id}?wait=`: the answer comes when the job finishes (a real worker
//! completes it; a cancel ends it), woken by the finish's NOTIFY rather than a timer; at
//! the end of the wait it is the job as it is; a malformed or too long wait is a 400
//! naming `wait`; a missing or another tenant's job a 404, as without `wait`.

use std::time::{Duration, Instant};

use serde_json::json;
use sqlx::PgPool;

use crate::support::Sluice;
use crate::support::http::{Api, error_of, json};
use crate::support::worker_process::WorkerProcess;

async fn enqueue(api: &Api, token: &str, body: serde_json::Value) -> i64 {
    let (status, job) = json(api.post("/v1/jobs", token, body).await).await;
    assert_eq!(status, 201, "{job}");
    job["id"].as_i64().unwrap()
}

/// `GET /v1/jobs/{id}?wait=…` in the background: its status, body and how long it took.
fn wait_for(
    api: &Api,
    token: &str,
    id: i64,
    wait: &str,
) -> tokio::task::JoinHandle<(u16, serde_json::Value, Duration)> {
    let request = api
        .req(
            reqwest::Method::GET,
            &format!("/v1/jobs/{id}?wait={wait}"),
            token,
        )
        .send();
    tokio::spawn(async move {
        let started = Instant::now();
        let (status, body) = json(request.await.unwrap()).await;
        (status, body, started.elapsed())
    })
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_wait_answers_when_a_worker_finishes_the_job(pool: PgPool) {
    let api = Api::start(&pool).await;
    let token = api.tenant("acme").await;
    api.job_type("acme", "echo", "echo").await;
    let id = enqueue(&api, &token, json!({"type": "echo", "payload": {"n": 1}})).await;

    let waiting = wait_for(&api, &token, id, "120s");
    // The request is waiting before any worker exists.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiting.is_finished(), "answered before the job ran");
    let mut worker = WorkerProcess::spawn(&Sluice::new(&pool), "w1", &["--drain"]);
    let (status, job, took) = waiting.await.unwrap();
    assert_eq!(status, 200, "{job}");
    assert_eq!(job["state"], "completed", "{job}");
    assert_eq!(job["output"], json!({"n": 1}));
    // Answered by the finish, long before the wait's end (120 s) and the safety poll.
    assert!(took < sluice_store::SAFETY_POLL, "answered after {took:?}");
    let exit = worker.wait_timeout(Duration::from_secs(60));
    assert!(
        exit.is_some_and(|s| s.success()),
        "the draining worker: {exit:?}\n{}",
        worker.log()
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_wait_ends_with_the_job_as_it_is_or_with_its_cancel(pool: PgPool) {
    let api = Api::start(&pool).await;
    let token = api.tenant("acme").await;
    let other = api.tenant("globex").await;
    api.job_type("acme", "echo", "echo").await;
    let id = enqueue(&api, &token, json!({"type": "echo", "delay": "1h"})).await;

    // The end of the wait: the job as it is.
    let (status, job, took) = wait_for(&api, &token, id, "1s").await.unwrap();
    assert_eq!(status, 200, "{job}");
    assert_eq!(job["state"], "pending");
    assert!(took >= Duration::from_secs(1), "{took:?}");
    // No wait (or 0s): at once.
    let (status, job) = json(api.get(&format!("/v1/jobs/{id}?wait=0s"), &token).await).await;
    assert_eq!((status, job["state"].as_str()), (200, Some("pending")));

    // A cancel ends a wait.
    let waiting = wait_for(&api, &token, id, "120s");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, _) = json(
        api.post(&format!("/v1/jobs/{id}/cancel"), &token, json!({}))
            .await,
    )
    .await;
    assert_eq!(status, 200);
    let (status, job, took) = waiting.await.unwrap();
    assert_eq!(
        (status, job["state"].as_str()),
        (200, Some("cancelled")),
        "{job}"
    );
    assert!(took < sluice_store::SAFETY_POLL, "answered after {took:?}");

    // Malformed and too long waits name the parameter.
    for wait in ["soon", "-1s", "301s", "1h"] {
        let (status, body) =
            json(api.get(&format!("/v1/jobs/{id}?wait={wait}"), &token).await).await;
        assert_eq!(status, 400, "{wait}: {body}");
        let (code, message) = error_of(&body);
        assert_eq!(code, "invalid_request");
        assert!(message.contains("wait"), "{wait}: {message}");
    }
    // Another tenant's job, and a missing one: 404 as without a wait, at once.
    for (path, who) in [
        (format!("/v1/jobs/{id}?wait=30s"), &other),
        (format!("/v1/jobs/{}?wait=30s", id + 1000), &token),
    ] {
        let started = Instant::now();
        let (status, body) = json(api.get(&path, who).await).await;
        assert_eq!(status, 404, "{path}: {body}");
        assert!(started.elapsed() < Duration::from_secs(30));
    }
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_server_with_a_shorter_max_wait_answers_at_it(pool: PgPool) {
    let api = Api::start_with(
        &pool,
        sluice_http::app_state::ServeConfig {
            max_job_wait: Duration::from_millis(500),
            ..sluice_http::app_state::ServeConfig::default()
        },
    )
    .await;
    let token = api.tenant("acme").await;
    api.job_type("acme", "echo", "echo").await;
    let id = enqueue(&api, &token, json!({"type": "echo", "delay": "1h"})).await;
    // 300s is a wait the API accepts; this server ends it at its own limit.
    let (status, job, took) = wait_for(&api, &token, id, "300s").await.unwrap();
    assert_eq!(
        (status, job["state"].as_str()),
        (200, Some("pending")),
        "{job}"
    );
    assert!(took < Duration::from_secs(60), "{took:?}");
}
