//! A worker SIGKILLed in the middle of a three-step job: the durable job resumes on a
//! second worker without repeating a journaled step; the same type not durable repeats
//! them (the contrast is the point); the request in flight at the kill is sent again
//! with the same `Idempotency-Key`.

use std::time::Duration;

use serde_json::json;
use sqlx::PgPool;

use super::receiver::Receiver;
use super::{WORKER, enqueue_steps, finished, payload, steps_type, type_args, wait_until};
use crate::support::Sluice;
use crate::support::worker_process::WorkerProcess;

/// Runs a three-step job, pausing 4 s after step 2; kills the first worker during the
/// pause (once the receiver answered step 2), runs `meanwhile`, and lets a second one
/// finish. Returns the
/// steps the receiver got, in order, and the finished job.
fn killed_during_the_pause(
    pool: &PgPool,
    durable: bool,
    meanwhile: impl FnOnce(&Sluice, &Receiver),
) -> (Vec<u64>, serde_json::Value, Vec<String>) {
    let receiver = Receiver::start();
    let flags: &[&str] = if durable { &["--durable"] } else { &[] };
    let sluice = steps_type(pool, &receiver, "10ms", flags);
    let id = enqueue_steps(&sluice, payload(&receiver, 3, json!({ "2": 4000 })));
    let mut first = WorkerProcess::spawn(&sluice, "w1", WORKER);
    wait_until("step 2", Duration::from_secs(60), || {
        receiver.steps().contains(&2)
    });
    // The answer reaches the guest once it is journaled; then it pauses for 4 s.
    std::thread::sleep(Duration::from_millis(500));
    first.kill();
    meanwhile(&sluice, &receiver);
    let second = WorkerProcess::spawn(&sluice, "w2", WORKER);
    let job = finished(&sluice, &id, &second);
    let attempts = sluice.json(&["jobs", "attempts", &id]);
    let outcomes = attempts
        .as_array()
        .expect("the attempts")
        .iter()
        .map(|a| a["outcome"].as_str().unwrap_or("").to_owned())
        .collect();
    (receiver.steps(), job, outcomes)
}

#[sqlx::test(migrations = false)]
async fn a_killed_durable_job_resumes_on_another_worker_and_sends_each_step_once(pool: PgPool) {
    let (steps, job, outcomes) = killed_during_the_pause(&pool, true, |_, _| {});
    assert_eq!(job["state"], "completed", "{job}");
    assert_eq!(steps, [1, 2, 3], "each step exactly once");
    assert_eq!(
        job["output"],
        json!(["step-1", "step-2", "step-3"]),
        "{job}"
    );
    assert_eq!(job["attempt"], 2, "{job}");
    assert_eq!(outcomes, ["lease_expired", "completed"], "{job}");
}

#[sqlx::test(migrations = false)]
async fn the_same_job_not_durable_repeats_the_steps_before_the_kill(pool: PgPool) {
    let (steps, job, _) = killed_during_the_pause(&pool, false, |_, _| {});
    assert_eq!(job["state"], "completed", "{job}");
    assert_eq!(
        steps,
        [1, 2, 1, 2, 3],
        "a retry runs the task from the start"
    );
}

#[sqlx::test(migrations = false)]
async fn the_request_in_flight_at_the_kill_is_sent_again_with_the_same_idempotency_key(
    pool: PgPool,
) {
    let receiver = Receiver::start();
    receiver.hold(2, Duration::from_secs(6));
    let sluice = steps_type(&pool, &receiver, "10ms", &["--durable"]);
    let id = enqueue_steps(&sluice, payload(&receiver, 3, json!({})));
    let mut first = WorkerProcess::spawn(&sluice, "w1", WORKER);
    wait_until("step 2", Duration::from_secs(60), || {
        receiver.steps().contains(&2)
    });
    first.kill();
    let second = WorkerProcess::spawn(&sluice, "w2", WORKER);
    let job = finished(&sluice, &id, &second);
    assert_eq!(job["state"], "completed", "{job}");

    let seen = receiver.seen();
    assert_eq!(
        seen.iter().map(|s| s.step).collect::<Vec<_>>(),
        [1, 2, 2, 3],
        "step 1 journaled, step 2 in flight (sent again), step 3 once: {seen:?}"
    );
    let keys: Vec<&str> = seen
        .iter()
        .map(|s| s.key.as_deref().unwrap_or(""))
        .collect();
    assert!(
        keys.iter().all(|k| k.starts_with(&format!("sluice-{id}-"))),
        "{seen:?}"
    );
    assert_eq!(
        keys[1], keys[2],
        "the replayed run sends step 2 with the same key"
    );
    assert_ne!(keys[0], keys[1]);
    assert_ne!(keys[2], keys[3]);
}

#[sqlx::test(migrations = false)]
async fn a_type_re_pointed_meanwhile_does_not_change_the_component_a_durable_job_resumes_with(
    pool: PgPool,
) {
    let (steps, job, _) = killed_during_the_pause(&pool, true, |sluice, receiver| {
        // The type now runs `echo`; the job keeps the component its first attempt ran.
        let args = type_args(receiver, "10ms", &["--durable"]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        sluice.define("steps", "echo", &args);
    });
    assert_eq!(job["state"], "completed", "{job}");
    assert_eq!(steps, [1, 2, 3]);
    assert_eq!(
        job["output"],
        json!(["step-1", "step-2", "step-3"]),
        "{job}"
    );
}
