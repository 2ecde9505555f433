//! Contract 0.3's waits on a real worker (`--concurrency 1`): a durable sleep frees the
//! slot (another job runs meanwhile) and the job resumes after it on the same attempt;
//! `sluice.signal` in a transaction that rolls back wakes nothing, committed it wakes the
//! job and its payload reaches the receiver; a signal sent (`sluice jobs signal`) before
//! the await is taken by it; a parent awaits fifty children without holding the slot;
//! a snooze runs the job again without spending an attempt, and a job that keeps
//! snoozing fails visibly at its type's `--max-snoozes`.

use std::time::{Duration, Instant};

use serde_json::json;
use sqlx::PgPool;

use super::receiver::Receiver;
use super::{WORKER, enqueue_steps, finished, steps_type, wait_until};
use crate::support::worker_process::WorkerProcess;
use crate::support::{Sluice, enqueue, show};

fn state(sluice: &Sluice, id: &str) -> String {
    show(sluice, id)["state"].as_str().unwrap_or("").to_owned()
}

#[sqlx::test(migrations = false)]
async fn a_durable_sleep_frees_the_slot_and_the_job_resumes_on_the_same_attempt(pool: PgPool) {
    let receiver = Receiver::start();
    let sluice = steps_type(&pool, &receiver, "10ms", &["--durable"]);
    sluice.define("echo", "echo", &[]);
    let sleeper = enqueue_steps(
        &sluice,
        json!({ "urls": receiver.urls(2), "sleep_after": { "1": 3000 } }),
    );
    let worker = WorkerProcess::spawn(&sluice, "w1", WORKER);
    wait_until("the sleeper to wait", Duration::from_secs(60), || {
        state(&sluice, &sleeper) == "waiting"
    });
    let slept_at = Instant::now();
    assert_eq!(receiver.steps(), [1]);
    let other = enqueue(&sluice, "echo", json!({ "hello": 1 }));
    let other = finished(&sluice, &other, &worker);
    assert_eq!(other["state"], "completed", "{other}");
    assert!(
        slept_at.elapsed() < Duration::from_millis(2500),
        "the other job ran while the sleeper slept"
    );
    let job = finished(&sluice, &sleeper, &worker);
    let seen = receiver.seen();
    let slept = seen[1].at - seen[0].at;
    assert!(
        slept >= Duration::from_secs(3),
        "step 2 arrived {slept:?} after step 1, before the 3 s sleep ended: {job}"
    );
    assert_eq!(job["state"], "completed", "{job}");
    assert_eq!(job["attempt"], 1, "a suspension spends no attempt: {job}");
    assert_eq!(job["output"], json!(["step-1", "step-2"]), "{job}");
    assert_eq!(receiver.steps(), [1, 2], "each step once");
    let attempts = sluice.json(&["jobs", "attempts", &sleeper]);
    let outcomes: Vec<&str> = attempts
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["outcome"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(outcomes, ["suspended", "completed"], "{attempts}");
}

#[sqlx::test(migrations = false)]
async fn a_rolled_back_signal_wakes_nothing_and_a_committed_one_wakes_the_job(pool: PgPool) {
    let receiver = Receiver::start();
    let sluice = steps_type(&pool, &receiver, "10ms", &["--durable"]);
    let id = enqueue_steps(
        &sluice,
        json!({ "urls": receiver.urls(2), "signal_before": { "2": "approve" } }),
    );
    let worker = WorkerProcess::spawn(&sluice, "w1", WORKER);
    wait_until("the job to wait", Duration::from_secs(60), || {
        state(&sluice, &id) == "waiting"
    });
    let shown = show(&sluice, &id);
    assert_eq!(shown["waiting_for"], "approve", "{shown}");
    let job_id: i64 = id.parse().unwrap();
    let signal = "SELECT sluice.signal($1, 'approve', '{\"by\": \"ana\"}'::jsonb)";
    let mut tx = pool.begin().await.unwrap();
    sqlx::query(signal)
        .bind(job_id)
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    // Two passes of the waker: a rolled-back signal left nothing to find.
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(state(&sluice, &id), "waiting");
    assert_eq!(receiver.steps(), [1]);

    let mut tx = pool.begin().await.unwrap();
    sqlx::query(signal)
        .bind(job_id)
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let job = finished(&sluice, &id, &worker);
    assert_eq!(job["state"], "completed", "{job}");
    assert_eq!(job["attempt"], 1, "{job}");
    let seen = receiver.seen();
    assert_eq!(receiver.steps(), [1, 2]);
    assert_eq!(seen[1].signal, Some(json!({ "by": "ana" })), "{seen:?}");
}

#[sqlx::test(migrations = false)]
async fn a_signal_sent_before_the_await_is_taken_by_it(pool: PgPool) {
    let receiver = Receiver::start();
    let sluice = steps_type(&pool, &receiver, "10ms", &["--durable"]);
    let id = enqueue_steps(
        &sluice,
        json!({ "urls": receiver.urls(1), "signal_before": { "1": "go" } }),
    );
    let sent = sluice.json(&["jobs", "signal", &id, "go", "--payload", "[1,2]"]);
    assert_eq!(sent["woke"], false, "kept until awaited: {sent}");
    let refused = sluice.run(&["jobs", "signal", &id, "", "--payload", "1"]);
    assert!(!refused.status.success());
    let worker = WorkerProcess::spawn(&sluice, "w1", WORKER);
    let job = finished(&sluice, &id, &worker);
    assert_eq!(job["state"], "completed", "{job}");
    assert_eq!(receiver.seen()[0].signal, Some(json!([1, 2])));
    let finished_job = sluice.run(&["jobs", "signal", &id, "go"]);
    assert!(
        !finished_job.status.success(),
        "a finished job takes no signal"
    );
    let error = String::from_utf8_lossy(&finished_job.stderr);
    assert!(error.contains("completed"), "{error}");
}

#[sqlx::test(migrations = false)]
async fn a_parent_awaits_fifty_children_without_holding_the_slot(pool: PgPool) {
    let sluice = Sluice::with_type(&pool, "fan", "fan-in", &["--durable"]);
    sluice.define("echo", "echo", &[]);
    let id = enqueue(
        &sluice,
        "fan",
        json!({ "children": 50, "child_type": "echo" }),
    );
    let worker = WorkerProcess::spawn(&sluice, "w1", WORKER);
    let job = finished(&sluice, &id, &worker);
    assert_eq!(job["state"], "completed", "{job}");
    assert_eq!(job["attempt"], 1, "{job}");
    let output = &job["output"];
    assert_eq!(output["completed"], 50, "{job}");
    let outputs = output["outputs"].as_array().expect("outputs");
    assert_eq!(outputs.len(), 50);
    assert_eq!(outputs[7], json!({ "i": 7 }).to_string(), "{output}");
    let children = sluice.json(&["jobs", "list", "--parent", &id, "--limit", "100"]);
    assert_eq!(
        children.as_array().map(Vec::len),
        Some(50),
        "each child once"
    );
}

#[sqlx::test(migrations = false)]
async fn a_snooze_spends_no_attempt_and_a_job_that_keeps_snoozing_fails(pool: PgPool) {
    let sluice = Sluice::with_type(&pool, "snooze", "snoozer", &["--durable"]);
    sluice.define(
        "forever",
        "snoozer",
        &["--max-attempts", "1", "--max-snoozes", "3"],
    );
    let durable = enqueue(&sluice, "snooze", json!({ "snoozes": 2, "delay_ms": 300 }));
    let plain = enqueue(&sluice, "forever", json!({ "snoozes": 1, "delay_ms": 0 }));
    let worker = WorkerProcess::spawn(&sluice, "w1", WORKER);
    let job = finished(&sluice, &durable, &worker);
    assert_eq!(job["state"], "completed", "{job}");
    assert_eq!(job["attempt"], 1, "{job}");
    let job = finished(&sluice, &plain, &worker);
    assert_eq!(job["state"], "dead", "{job}");
    let error = job["last_error"].as_str().unwrap_or("");
    assert!(
        error.contains("snoozed more than 3 times"),
        "the type's limit: {job}"
    );
    let shown = sluice.json(&["types", "show", "forever"]);
    assert_eq!(shown["max_snoozes"], 3, "{shown}");
}
