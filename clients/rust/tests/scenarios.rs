//! The live scenarios of the Rust client, against a real `sluice serve` with a worker and
//! the job types `echo`, `fatal` and `flaky`: [`run_all`]. Self-contained (it depends on
//! `sluice_client`, `tokio`, `serde_json` and `chrono` only), so `tests/live.rs` and the
//! repository's end-to-end test include this same file. Every scenario makes its own jobs
//! with keys unique to the run, so it may run again against the same server.

use std::time::Duration;

use chrono::Utc;
use serde_json::json;
use sluice_client::{
    Client, Enqueue, Error, ErrorCode, JobState, JobView, ListParams, PriorityLabel,
};

/// Long enough for a worker to pick a job up on a busy machine.
const FINISH: Duration = Duration::from_secs(60);

/// Runs every scenario against the server at `base` with `token` (a token of tenant
/// `default`); panics on the first failure.
pub async fn run_all(base: &str, token: &str) {
    let client = Client::new(base, token).expect("a client");
    let run = format!(
        "rs-{}-{}",
        std::process::id(),
        Utc::now().timestamp_micros()
    );
    matches_the_live_document(&client).await;
    echo_completes_with_its_payload(&client).await;
    an_idempotency_key_enqueues_once(&client, &run).await;
    a_priority_label_is_its_number(&client).await;
    a_delayed_job_waits_is_cancelled_and_retried(&client).await;
    a_batch_enqueues_every_job(&client).await;
    fatal_dies(&client).await;
    flaky_completes_on_its_attempt(&client).await;
    listing_filters_and_pages(&client).await;
    errors_are_typed(&client, base).await;
}

async fn matches_the_live_document(client: &Client) {
    let document = client
        .api()
        .openapi_json()
        .await
        .expect("the live document");
    let differences = sluice_client::document_differences(&document.into());
    assert!(
        differences.is_empty(),
        "the client does not match the live document (regenerate it: python3 clients/rust/generate.py):\n{}",
        differences.join("\n")
    );
}

async fn wait_finished(client: &Client, id: i64) -> JobView {
    client
        .wait(id, FINISH)
        .await
        .unwrap_or_else(|e| panic!("job {id} did not finish: {e}"))
}

async fn echo_completes_with_its_payload(client: &Client) {
    let payload = json!({"hello": "world", "n": [1, 2, 3]});
    let enqueued = client
        .enqueue(Enqueue::new("echo", payload.clone()))
        .await
        .expect("enqueue echo");
    assert!(enqueued.created);
    assert_eq!(enqueued.job.r#type, "echo");
    let job = wait_finished(client, enqueued.job.id).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}");
    assert_eq!(job.output, payload);
    assert!(job.finished_at.is_some());
}

async fn an_idempotency_key_enqueues_once(client: &Client, run: &str) {
    let key = format!("{run}-idempotent");
    let job = || Enqueue::new("echo", json!({"once": true})).idempotency_key(key.clone());
    let first = client.enqueue(job()).await.expect("first enqueue");
    let second = client.enqueue(job()).await.expect("second enqueue");
    assert!(first.created);
    assert!(!second.created, "the second enqueue created a job");
    assert_eq!(first.job.id, second.job.id);
    assert_eq!(second.job.idempotency_key.as_deref(), Some(key.as_str()));
}

async fn a_priority_label_is_its_number(client: &Client) {
    let high = client
        .enqueue(Enqueue::new("echo", json!({})).priority(PriorityLabel::High))
        .await
        .expect("enqueue high");
    assert_eq!(high.job.priority, 20);
    let custom = client
        .enqueue(Enqueue::new("echo", json!({})).priority(25))
        .await
        .expect("enqueue 25");
    assert_eq!(custom.job.priority, 25);
}

async fn a_delayed_job_waits_is_cancelled_and_retried(client: &Client) {
    let enqueued = client
        .enqueue(Enqueue::new("echo", json!({"later": true})).delay(Duration::from_secs(3600)))
        .await
        .expect("enqueue delayed");
    let id = enqueued.job.id;
    assert_eq!(enqueued.job.state, JobState::Pending);
    assert!(enqueued.job.run_at > Utc::now() + chrono::Duration::minutes(55));
    match client.wait(id, Duration::from_millis(300)).await {
        Err(Error::Timeout { job, .. }) => assert_eq!(job.state, JobState::Pending),
        other => panic!("a short wait of a delayed job: {other:?}"),
    }
    let sent = client
        .signal(id, "nudge", json!({"by": "rust"}))
        .await
        .expect("signal");
    assert_eq!(sent.job_id, id);
    assert!(!sent.woke);
    let cancelled = client.cancel(id).await.expect("cancel");
    assert_eq!(cancelled.state, JobState::Cancelled);
    assert!(cancelled.finished_at.is_some());
    assert_eq!(wait_finished(client, id).await.state, JobState::Cancelled);
    let error = client.cancel(id).await.expect_err("cancel a cancelled job");
    assert!(
        matches!(
            &error,
            Error::Api {
                status: 409,
                code: ErrorCode::Conflict,
                ..
            }
        ),
        "{error:?}"
    );
    // A retried job is due now: the worker may claim it before the answer is read.
    let retried = client.retry(id).await.expect("retry");
    assert!(
        matches!(retried.state, JobState::Pending | JobState::Running),
        "a retried job is pending again: {retried:?}"
    );
    // Due now, it runs: waiting for it leaves nothing running. (Cancelling it again here
    // races the worker's claim, and the server answered that race with a 500 once in a
    // few runs: `jobs_cancel_requested_only_running`, reported to the lead.)
    let rerun = wait_finished(client, id).await;
    assert_eq!(rerun.state, JobState::Completed, "{rerun:?}");
    assert_eq!(rerun.output, json!({"later": true}));
    assert_eq!(rerun.attempt, 1);
}

async fn a_batch_enqueues_every_job(client: &Client) {
    let payloads = [json!({"i": 0}), json!({"i": 1}), json!({"i": 2})];
    let items = client
        .enqueue_batch(payloads.iter().map(|p| Enqueue::new("echo", p.clone())))
        .await
        .expect("enqueue a batch");
    assert_eq!(items.len(), 3);
    for (item, payload) in items.iter().zip(&payloads) {
        assert!(item.created);
        let job = wait_finished(client, item.id).await;
        assert_eq!(job.state, JobState::Completed);
        assert_eq!(&job.output, payload);
    }
}

async fn fatal_dies(client: &Client) {
    let enqueued = client
        .enqueue(Enqueue::new("fatal", json!({})))
        .await
        .expect("enqueue fatal");
    let job = wait_finished(client, enqueued.job.id).await;
    assert_eq!(job.state, JobState::Dead, "{job:?}");
    assert_eq!(job.attempt, 1);
    assert!(job.last_error.is_some(), "a dead job has its last error");
}

async fn flaky_completes_on_its_attempt(client: &Client) {
    let enqueued = client
        .enqueue(Enqueue::new("flaky", json!({"succeed_on": 2})))
        .await
        .expect("enqueue flaky");
    let job = wait_finished(client, enqueued.job.id).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}");
    assert_eq!(job.attempt, 2);
}

async fn listing_filters_and_pages(client: &Client) {
    let mut ours = Vec::new();
    for i in 0..2 {
        let job = Enqueue::new("echo", json!({"page": i})).delay(Duration::from_secs(3600));
        ours.push(client.enqueue(job).await.expect("enqueue").job.id);
    }
    let params = ListParams::default()
        .state(JobState::Pending)
        .job_type("echo")
        .limit(1);
    let first = client.list(&params).await.expect("list a page");
    assert_eq!(first.jobs.len(), 1);
    assert!(first.next_cursor.is_some(), "{first:?}");
    let mut pages = client.pages(params.clone());
    let mut seen = Vec::new();
    while let Some(page) = pages.next_page().await {
        let page = page.expect("a page");
        assert!(page.jobs.len() <= 1);
        seen.extend(page.jobs);
    }
    for job in &seen {
        assert_eq!(job.state, JobState::Pending);
        assert_eq!(job.r#type, "echo");
    }
    let ids: Vec<i64> = seen.iter().map(|j| j.id).collect();
    assert!(ids.contains(&ours[0]) && ids.contains(&ours[1]), "{ids:?}");
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first: {ids:?}");
    let all = client.list_all(params.limit(1000)).await.expect("list all");
    assert!(all.iter().any(|j| j.id == ours[0]) && all.iter().any(|j| j.id == ours[1]));
    for id in ours {
        client.cancel(id).await.expect("cancel");
    }
    let dead = client
        .list(
            &ListParams::default()
                .state(JobState::Dead)
                .job_type("fatal"),
        )
        .await
        .expect("list dead");
    assert!(!dead.jobs.is_empty());
    assert!(dead.jobs.iter().all(|j| j.state == JobState::Dead));
}

async fn errors_are_typed(client: &Client, base: &str) {
    let error = client
        .enqueue(Enqueue::new("no-such-type", json!({})))
        .await
        .expect_err("an unknown job type");
    assert!(
        matches!(
            &error,
            Error::Api {
                status: 404,
                code: ErrorCode::JobTypeNotFound,
                ..
            }
        ),
        "{error:?}"
    );
    let error = client.get(i64::MAX).await.expect_err("a missing job");
    assert!(
        matches!(
            &error,
            Error::Api {
                status: 404,
                code: ErrorCode::NotFound,
                ..
            }
        ),
        "{error:?}"
    );
    let stranger = Client::new(base, "sluice_not_a_token").expect("a client");
    let error = stranger.get(1).await.expect_err("a bad token");
    assert!(
        matches!(
            &error,
            Error::Api {
                status: 401,
                code: ErrorCode::Unauthorized,
                ..
            }
        ),
        "{error:?}"
    );
    let nowhere = Client::new("http://127.0.0.1:9", "t").expect("a client");
    let error = nowhere.get(1).await.expect_err("no server");
    assert!(matches!(error, Error::Transport(_)), "{error:?}");
}
