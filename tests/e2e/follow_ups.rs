//! Follow-up jobs end to end through the real `sluice` binary: the `fan-out` sample
//! enqueues children from inside its attempt (`sluice:task/jobs.enqueue`); they exist
//! only if the attempt completes, are listed with their parent (`jobs show`, `jobs list
//! --parent`), wake the worker like any enqueue, and stay within the tenant's caps; an
//! unknown job type is the guest's error and inserts nothing; one job fans out 10,000;
//! children the insert refuses at completion (the tenant's payload limit lowered while
//! the parent ran) fail the parent's attempt, retryably, with none left behind; a
//! secret the parent read is masked in its children's payloads.

use std::time::Duration;

use crate::support::worker_process::WorkerProcess;
use crate::support::{Sluice, output, secrets, show, wait_for};
use serde_json::{Value, json};
use sqlx::PgPool;

fn enqueue(sluice: &Sluice, job_type: &str, payload: Value, extra: &[&str]) -> String {
    let mut args = vec!["enqueue", job_type, "--payload"];
    let payload = payload.to_string();
    args.push(&payload);
    args.extend_from_slice(extra);
    sluice.json(&args)["id"].as_i64().unwrap().to_string()
}

async fn finished(sluice: &Sluice, id: &str) -> Value {
    wait_for(
        &format!("job {id} to finish"),
        Duration::from_secs(60),
        || async {
            let job = show(sluice, id);
            matches!(job["state"].as_str(), Some("completed" | "dead")).then_some(job)
        },
    )
    .await
}

fn children(sluice: &Sluice, parent: &str) -> Vec<Value> {
    sluice
        .json(&["jobs", "list", "--parent", parent])
        .as_array()
        .unwrap()
        .clone()
}

#[sqlx::test(migrations = false)]
async fn follow_up_jobs_exist_only_when_their_parent_completes(pool: PgPool) {
    let sluice = Sluice::migrated(&pool);
    sluice.define(
        "fan",
        "fan-out",
        &["--max-attempts", "2", "--backoff-base", "10ms"],
    );
    sluice.define("echo", "echo", &[]);
    sluice.ok(&["tenants", "limits", "default", "--max-follow-ups", "3"]);
    let _worker = WorkerProcess::spawn(&sluice, "w1", &[]);

    // Completed: three children, in order, each run by the same worker (they woke it).
    let parent = enqueue(&sluice, "fan", json!({"type": "echo", "count": 3}), &[]);
    let job = finished(&sluice, &parent).await;
    assert_eq!(job["state"], "completed", "{job}");
    assert_eq!(output(&job), json!({"enqueued": 3, "refused": null}));
    assert_eq!(job["children_count"], 3, "{job}");
    let kids: Vec<String> = job["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.to_string())
        .collect();
    for (n, kid) in kids.iter().enumerate() {
        let child = finished(&sluice, kid).await;
        assert_eq!(child["state"], "completed", "{child}");
        assert_eq!(child["parent_id"].to_string(), parent);
        assert_eq!(output(&child), json!({"n": n, "attempt": 1}));
    }
    let listed = children(&sluice, &parent);
    assert_eq!(listed.len(), 3);
    let text = sluice.ok(&["jobs", "show", &parent]);
    assert!(
        text.contains(&format!("children  3: {}", kids.join(", "))),
        "{text}"
    );
    let text = sluice.ok(&["jobs", "show", &kids[0]]);
    assert!(text.contains(&format!("parent    {parent}")), "{text}");

    // An attempt that enqueues and then fails leaves none, however it ends.
    for then in ["retry", "fatal"] {
        let id = enqueue(
            &sluice,
            "fan",
            json!({"type": "echo", "count": 2, "then": then}),
            &[],
        );
        let job = finished(&sluice, &id).await;
        assert_eq!(job["state"], "dead", "{job}");
        assert_eq!(job["children_count"], 0, "{job}");
        assert!(children(&sluice, &id).is_empty());
    }
    // A retried attempt asks again: only the successful attempt's children exist.
    let id = enqueue(
        &sluice,
        "fan",
        json!({"type": "echo", "count": 2, "retry_first": true}),
        &[],
    );
    let job = finished(&sluice, &id).await;
    assert_eq!(
        (job["state"].as_str(), job["attempt"].as_i64()),
        (Some("completed"), Some(2))
    );
    let kids = children(&sluice, &id);
    assert_eq!(kids.len(), 2, "{kids:?}");
    for kid in &kids {
        let child = finished(&sluice, &kid["id"].to_string()).await;
        assert_eq!(output(&child)["attempt"], 2, "{child}");
    }

    // An unknown type is the guest's error, and nothing is inserted: reported by a
    // guest that keeps going, fatal through `?` for one that does not.
    let id = enqueue(
        &sluice,
        "fan",
        json!({"type": "no-such-type", "count": 1, "keep_going": true}),
        &[],
    );
    let job = finished(&sluice, &id).await;
    assert_eq!(job["state"], "completed", "{job}");
    let refused = output(&job)["refused"].as_str().unwrap().to_owned();
    assert!(
        refused.contains("unknown job type `no-such-type`"),
        "{refused}"
    );
    assert!(children(&sluice, &id).is_empty());
    let id = enqueue(
        &sluice,
        "fan",
        json!({"type": "no-such-type", "count": 1}),
        &[],
    );
    let job = finished(&sluice, &id).await;
    assert_eq!(
        (job["state"].as_str(), job["attempt"].as_i64()),
        (Some("dead"), Some(1))
    );
    assert!(
        job["last_error"]
            .as_str()
            .unwrap()
            .contains("unknown job type"),
        "{job}"
    );

    // Past the tenant's cap, enqueue is refused: the first three exist.
    let id = enqueue(
        &sluice,
        "fan",
        json!({"type": "echo", "count": 5, "keep_going": true, "delay_ms": 3_600_000}),
        &[],
    );
    let job = finished(&sluice, &id).await;
    let out = output(&job);
    assert_eq!(out["enqueued"], 3, "{out}");
    assert!(
        out["refused"].as_str().unwrap().contains("max_follow_ups"),
        "{out}"
    );
    let kids = children(&sluice, &id);
    assert_eq!(kids.len(), 3);
    assert!(
        kids.iter().all(|k| k["state"] == "pending"),
        "delayed: {kids:?}"
    );
    // An invalid option is refused the same way, naming it.
    let id = enqueue(
        &sluice,
        "fan",
        json!({"type": "echo", "count": 1, "keep_going": true, "max_attempts": 0}),
        &[],
    );
    let job = finished(&sluice, &id).await;
    let refused = output(&job)["refused"].as_str().unwrap().to_owned();
    assert!(refused.contains("max_attempts"), "{refused}");
}

#[sqlx::test(migrations = false)]
async fn one_job_fans_out_ten_thousand_children(pool: PgPool) {
    let sluice = Sluice::migrated(&pool);
    sluice.define("fan", "fan-out", &[]);
    sluice.define("later", "echo", &[]);
    sluice.ok(&["tenants", "limits", "default", "--max-follow-ups", "10000"]);
    let _worker = WorkerProcess::spawn(&sluice, "w1", &[]);
    let parent = enqueue(
        &sluice,
        "fan",
        json!({"type": "later", "count": 10_000, "delay_ms": 3_600_000}),
        &[],
    );
    let job = finished(&sluice, &parent).await;
    assert_eq!(job["state"], "completed", "{job}");
    assert_eq!(output(&job)["enqueued"], 10_000);
    assert_eq!(job["children_count"], 10_000);
    let (pending, distinct_seq): (i64, i64) = sqlx::query_as(
        "SELECT count(*), count(DISTINCT parent_seq) FROM sluice.jobs
         WHERE parent_id = $1 AND state = 'pending' AND job_type = 'later'",
    )
    .bind(parent.parse::<i64>().unwrap())
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!((pending, distinct_seq), (10_000, 10_000));
}

/// The job's state and attempt once `done(job)` holds.
async fn until(sluice: &Sluice, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    wait_for(
        &format!("job {id}: {what}"),
        Duration::from_secs(60),
        || async {
            let job = show(sluice, id);
            done(&job).then_some(job)
        },
    )
    .await
}

#[sqlx::test(migrations = false)]
async fn children_refused_at_completion_fail_the_attempt_retryably_and_leave_none(pool: PgPool) {
    let sluice = Sluice::migrated(&pool);
    sluice.define(
        "fan",
        "fan-out",
        &["--max-attempts", "2", "--backoff-base", "2s"],
    );
    sluice.define("echo", "echo", &[]);
    let _worker = WorkerProcess::spawn(&sluice, "w1", &[]);
    // The child passes the check when the guest asks (the tenant has no payload limit
    // then); while the parent still runs, the operator lowers the limit below the child's
    // payload, so the insert made with the completion refuses it.
    let parent = enqueue(
        &sluice,
        "fan",
        json!({"type": "echo", "count": 1, "wait_ms": 1500}),
        &[],
    );
    until(&sluice, &parent, "running", |job| job["state"] == "running").await;
    sluice.ok(&["tenants", "limits", "default", "--max-payload", "8"]);
    let job = until(&sluice, &parent, "its first attempt failed", |job| {
        job["last_error"].is_string()
    })
    .await;
    let error = job["last_error"].as_str().unwrap();
    assert!(
        error.contains("follow-up jobs refused") && error.contains("payload"),
        "{job}"
    );
    assert_ne!(job["state"], "dead", "retryable: {job}");
    assert_eq!(job["children_count"], 0, "{job}");
    // Set right again: the next attempt completes with its child, and only that one.
    sluice.ok(&["tenants", "limits", "default", "--unset", "payload"]);
    let job = finished(&sluice, &parent).await;
    assert_eq!(
        (job["state"].as_str(), job["attempt"].as_i64()),
        (Some("completed"), Some(2)),
        "{job}"
    );
    let kids = children(&sluice, &parent);
    assert_eq!(kids.len(), 1, "{kids:?}");
    let child = finished(&sluice, &kids[0]["id"].to_string()).await;
    assert_eq!(output(&child), json!({"n": 0, "attempt": 2}));
}

#[sqlx::test(migrations = false)]
async fn a_secret_handed_to_follow_up_jobs_is_masked_in_their_payloads(pool: PgPool) {
    let sluice = Sluice::migrated(&pool);
    let key = secrets::new_key();
    let value = "xoxb-17-follow-up-secret";
    secrets::set_secret(&sluice, &key, "default", "TOKEN", value);
    sluice.define("fan", "fan-out", &["--secret", "TOKEN"]);
    sluice.define("echo", "echo", &[]);
    let parent = enqueue(
        &sluice,
        "fan",
        json!({"type": "echo", "count": 2, "secret": "TOKEN"}),
        &[],
    );
    secrets::ok(
        secrets::keyed(&sluice, Some(&key), &["worker", "--drain"]),
        None,
    );

    let job = show(&sluice, &parent);
    assert_eq!(job["state"], "completed", "{job}");
    let kids = children(&sluice, &parent);
    assert_eq!(kids.len(), 2, "{kids:?}");
    let mut outputs: Vec<Value> = kids
        .iter()
        .map(|kid| {
            // The child ran (echo returns its payload) with the mask in place of the value.
            let child = show(&sluice, &kid["id"].to_string());
            assert_eq!(child["state"], "completed", "{child}");
            output(&child)
        })
        .collect();
    outputs.sort_by_key(|out| out["n"].as_i64());
    assert_eq!(
        outputs,
        [0, 1].map(|n| json!({"n": n, "attempt": 1, "token": "[secret TOKEN]"}))
    );
    let dump = std::process::Command::new("/usr/bin/pg_dump")
        .arg(&sluice.url)
        .output()
        .expect("run pg_dump");
    assert!(dump.status.success());
    assert!(!String::from_utf8_lossy(&dump.stdout).contains(value));
}
