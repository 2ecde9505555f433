//! What a durable job refuses to do: continue after its replay diverged from the journal
//! (the payload changed between attempts), or journal past its cap. Both end the job
//! `fatal` (dead at once, whatever attempts it had left) with a reason naming the call or
//! the cap.

use std::time::Duration;

use serde_json::json;
use sqlx::PgPool;

use super::receiver::Receiver;
use super::{WORKER, enqueue_steps, finished, payload, steps_type, wait_until};
use crate::support::show;
use crate::support::worker_process::WorkerProcess;

#[sqlx::test(migrations = false)]
async fn a_replay_that_calls_another_url_than_the_journal_recorded_ends_fatal(pool: PgPool) {
    let receiver = Receiver::start();
    // Step 2 fails once: the first attempt ends `retry` after journaling step 1.
    receiver.fail_once(2);
    let sluice = steps_type(&pool, &receiver, "3s", &["--durable"]);
    let id = enqueue_steps(&sluice, payload(&receiver, 2, json!({})));
    let worker = WorkerProcess::spawn(&sluice, "w1", WORKER);
    wait_until("the first attempt to fail", Duration::from_secs(60), || {
        let job = show(&sluice, &id);
        job["state"] == "pending" && job["last_error"].is_string()
    });
    let journal = sluice.json(&["jobs", "journal", &id]);
    let kinds: Vec<&str> = journal["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "http").count(),
        1,
        "the failed attempt gave back its last call (step 2's 500) and kept step 1: {journal}"
    );
    // Between the attempts, the job's first URL changes under it.
    let changed = json!({ "urls": [format!("{}/other/1", receiver.origin), receiver.urls(2)[1]] });
    sqlx::query("UPDATE sluice.jobs SET payload = $2, run_at = now() WHERE id = $1")
        .bind(id.parse::<i64>().unwrap())
        .bind(changed.to_string().into_bytes())
        .execute(&pool)
        .await
        .unwrap();
    let job = finished(&sluice, &id, &worker);
    assert_eq!(job["state"], "dead", "{job}");
    let error = job["last_error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("journal: replay diverged at call ")
            && error.contains("/step/1")
            && error.contains("/other/1"),
        "the reason names both calls: {error}"
    );
    assert_eq!(job["attempt"], 2, "fatal: no third attempt");
    assert_eq!(receiver.steps(), [1, 2], "the diverged run sent nothing");
}

#[sqlx::test(migrations = false)]
async fn a_journal_over_its_cap_ends_the_job_fatal_naming_the_cap(pool: PgPool) {
    let receiver = Receiver::start();
    let sluice = steps_type(
        &pool,
        &receiver,
        "10ms",
        &["--durable", "--journal-bytes", "200"],
    );
    let id = enqueue_steps(&sluice, payload(&receiver, 3, json!({})));
    let worker = WorkerProcess::spawn(&sluice, "w1", WORKER);
    let job = finished(&sluice, &id, &worker);
    assert_eq!(job["state"], "dead", "{job}");
    let error = job["last_error"].as_str().unwrap_or_default();
    assert!(error.contains("over its cap of 200 bytes"), "{error}");
    assert_eq!(job["attempt"], 1, "fatal at once: {job}");
}

/// The tenant's `max_journal_bytes` bounds every type of the tenant: one above it is
/// refused when set, and a type that sets none journals under the tenant's cap, which
/// the fatal reason names.
#[sqlx::test(migrations = false)]
async fn the_tenants_journal_cap_refuses_a_larger_type_and_bounds_one_that_sets_none(pool: PgPool) {
    let receiver = Receiver::start();
    let sluice = steps_type(&pool, &receiver, "10ms", &["--durable"]);
    sluice.ok(&["tenants", "limits", "default", "--max-journal-bytes", "200"]);
    let shown = sluice.json(&["tenants", "show", "default"]);
    assert_eq!(shown["max_journal_bytes"], 200, "{shown}");
    let refused = sluice.run(&[
        "types",
        "set",
        "steps",
        "--component",
        "durable-steps",
        "--durable",
        "--journal-bytes",
        "1KiB",
    ]);
    assert!(
        !refused.status.success(),
        "a type above the tenant's cap is refused"
    );
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("max_journal_bytes = 200"), "{stderr}");

    let id = enqueue_steps(&sluice, payload(&receiver, 3, json!({})));
    let worker = WorkerProcess::spawn(&sluice, "w1", WORKER);
    let job = finished(&sluice, &id, &worker);
    assert_eq!(job["state"], "dead", "{job}");
    let error = job["last_error"].as_str().unwrap_or_default();
    assert!(
        error.contains("over its cap of 200 bytes") && error.contains("--max-journal-bytes"),
        "the reason names the tenant's cap: {error}"
    );
}

#[sqlx::test(migrations = false)]
async fn another_component_forced_under_a_journaled_job_ends_fatal_naming_the_call(pool: PgPool) {
    let receiver = Receiver::start();
    receiver.fail_once(2);
    let sluice = steps_type(&pool, &receiver, "3s", &["--durable"]);
    let id = enqueue_steps(&sluice, payload(&receiver, 2, json!({})));
    let worker = WorkerProcess::spawn(&sluice, "w1", WORKER);
    wait_until("the first attempt to fail", Duration::from_secs(60), || {
        let job = show(&sluice, &id);
        job["state"] == "pending" && job["last_error"].is_string()
    });
    // `echo` (pushed beside it) forced as the job's pinned component: it makes no call.
    sluice.ok(&[
        "component",
        "push",
        crate::support::sample("echo").to_str().unwrap(),
        "--name",
        "echo",
    ]);
    sqlx::query(
        "UPDATE sluice.journal_heads SET component_id = \
         (SELECT id FROM sluice.components WHERE name = 'echo') WHERE job_id = $1",
    )
    .bind(id.parse::<i64>().unwrap())
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query("UPDATE sluice.jobs SET run_at = now() WHERE id = $1")
        .bind(id.parse::<i64>().unwrap())
        .execute(&pool)
        .await
        .unwrap();
    let job = finished(&sluice, &id, &worker);
    assert_eq!(job["state"], "dead", "{job}");
    let error = job["last_error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("journal: replay diverged at call ")
            && error.contains("the journal recorded "),
        "the reason names the recorded call: {error}"
    );
    assert_eq!(
        receiver.steps(),
        [1, 2],
        "the forced component sent nothing"
    );
}
