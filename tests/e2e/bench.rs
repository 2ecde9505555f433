//! The `sluice bench` contract other tools rely on: each subcommand runs the real worker
//! and store paths against `DATABASE_URL` and prints one JSON object as the last line of
//! stdout. Small sizes: this checks the contract and the counts, never the speed.

use crate::support::{Sluice, repo_root};
use sqlx::PgPool;

fn bench(sluice: &Sluice, args: &[&str]) -> serde_json::Value {
    let samples = repo_root().join("sample-tasks/target/wasm32-wasip2/release");
    let mut all = vec!["bench", "--samples", samples.to_str().unwrap()];
    all.extend_from_slice(args);
    sluice.json(&all)
}

async fn count(pool: &PgPool, sql: &'static str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(pool).await.unwrap()
}

#[sqlx::test(migrations = false)]
async fn drain_runs_every_job_through_the_worker(pool: PgPool) {
    let sluice = Sluice::new(&pool);
    let out = bench(
        &sluice,
        &[
            "drain",
            "--jobs",
            "200",
            "--concurrency",
            "4",
            "--prefetch",
            "8",
        ],
    );
    assert_eq!(out["cmd"], "work", "{out}");
    assert_eq!(out["n"], 200, "{out}");
    assert_eq!(out["c"], 4, "{out}");
    assert_eq!(out["pending_after"], 0, "{out}");
    assert!(out["jobs_per_s"].as_f64().unwrap() > 0.0, "{out}");
    let completed = count(
        &pool,
        "SELECT count(*) FROM sluice.jobs WHERE state = 'completed' AND attempt = 1",
    )
    .await;
    assert_eq!(completed, 200);
}

/// The phases `scripts/db-cpu` brackets one by one: `enqueue`, then `drain --queued`
/// (those jobs, none of its own), then `retention --retain-completed 0s` (one real pass
/// that removes them all).
#[sqlx::test(migrations = false)]
async fn queued_drain_and_one_retention_pass_take_the_jobs_through_their_life(pool: PgPool) {
    let sluice = Sluice::new(&pool);
    let out = bench(&sluice, &["enqueue", "--jobs", "150", "--batch", "100"]);
    assert_eq!(out["n"], 150, "{out}");
    let out = bench(
        &sluice,
        &["drain", "--queued", "--jobs", "150", "--concurrency", "4"],
    );
    assert_eq!(
        (out["n"].as_i64(), out["pending_after"].as_i64()),
        (Some(150), Some(0)),
        "{out}"
    );
    let completed = "SELECT count(*) FROM sluice.jobs WHERE state = 'completed'";
    assert_eq!(
        count(&pool, completed).await,
        150,
        "the queued jobs, none of its own"
    );
    // The default policy keeps them three days: nothing goes.
    let out = bench(&sluice, &["retention"]);
    assert_eq!(
        (out["cmd"].as_str(), out["deleted"].as_i64()),
        (Some("retention"), Some(0)),
        "{out}"
    );
    assert_eq!(count(&pool, completed).await, 150);
    // A second pass within the interval is refused by name, as a second host's would be.
    let samples = repo_root().join("sample-tasks/target/wasm32-wasip2/release");
    let samples = samples.to_str().unwrap();
    let again = sluice.run(&[
        "bench",
        "--samples",
        samples,
        "retention",
        "--retain-completed",
        "0s",
    ]);
    assert!(!again.status.success());
    let why = String::from_utf8_lossy(&again.stderr);
    assert!(
        why.contains("did not run") && why.contains("fresh database"),
        "{why}"
    );
    sqlx::query("UPDATE sluice.maintenance_runs SET last_started_at = now() - interval '1 day'")
        .execute(&pool)
        .await
        .unwrap();
    let out = bench(&sluice, &["retention", "--retain-completed", "0s"]);
    assert_eq!(out["deleted"], 150, "{out}");
    assert_eq!(count(&pool, "SELECT count(*) FROM sluice.jobs").await, 0);
}

/// `--task fatal`: the failure path end to end. Every job fails permanently, goes
/// through the batched failure statement, is dead after one attempt and keeps its error
/// in its attempt history.
#[sqlx::test(migrations = false)]
async fn drain_of_failing_jobs_records_each_one_dead_with_its_error(pool: PgPool) {
    let sluice = Sluice::new(&pool);
    let out = bench(
        &sluice,
        &[
            "drain",
            "--jobs",
            "120",
            "--concurrency",
            "4",
            "--prefetch",
            "8",
            "--task",
            "fatal",
        ],
    );
    assert_eq!(out["cmd"], "work", "{out}");
    assert_eq!(out["task"], "fatal", "{out}");
    assert_eq!(out["pending_after"], 0, "{out}");
    assert!(out["jobs_per_s"].as_f64().unwrap() > 0.0, "{out}");
    let dead = count(
        &pool,
        "SELECT count(*) FROM sluice.jobs
         WHERE job_type = 'fatal' AND state = 'dead' AND attempt = 1
           AND last_error = 'guest fatal: job ' || id || ' fails permanently on purpose'",
    )
    .await;
    assert_eq!(dead, 120);
    let history = count(
        &pool,
        "SELECT count(*) FROM sluice.job_attempts a JOIN sluice.jobs j ON j.id = a.job_id
         WHERE a.outcome = 'dead' AND a.error = j.last_error",
    )
    .await;
    assert_eq!(history, 120);
}

#[sqlx::test(migrations = false)]
async fn memory_drains_jobs_of_many_components_and_reports_the_peak(pool: PgPool) {
    let sluice = Sluice::new(&pool);
    let out = bench(
        &sluice,
        &[
            "memory",
            "--components",
            "3",
            "--jobs",
            "30",
            "--concurrency",
            "4",
            "--prefetch",
            "4",
        ],
    );
    assert_eq!(out["cmd"], "memory", "{out}");
    assert_eq!(out["completed"], 30, "{out}");
    assert!(out["peak_rss_mib"].as_f64().unwrap() > 0.0, "{out}");
    let types = count(
        &pool,
        "SELECT count(DISTINCT job_type) FROM sluice.jobs WHERE state = 'completed'",
    )
    .await;
    assert_eq!(types, 3);
}

#[sqlx::test(migrations = false)]
async fn sandbox_reports_instantiate_and_call_figures(pool: PgPool) {
    let sluice = Sluice::new(&pool);
    let out = bench(&sluice, &["sandbox", "--iterations", "20"]);
    assert_eq!(out["cmd"], "sandbox", "{out}");
    assert_eq!(out["iterations"], 20, "{out}");
    let p50 = out["instantiate_call_p50_us"].as_f64().unwrap();
    assert!(
        p50 > 0.0 && p50 <= out["attempt_p50_us"].as_f64().unwrap(),
        "{out}"
    );
    assert!(out["fuel_per_call"].as_u64().unwrap() > 0, "{out}");
}

/// `bench fairness` (issue #22): both phases report every light job, the flood phase's
/// first one apart, and the target as the issue defines it.
#[sqlx::test(migrations = false)]
async fn fairness_reports_both_phases_and_the_first_light_job_apart(pool: PgPool) {
    let sluice = Sluice::new(&pool);
    let out = bench(
        &sluice,
        &[
            "fairness",
            "--flood",
            "60",
            "--flood-ms",
            "5",
            "--light",
            "4",
            "--every-ms",
            "30",
            "--concurrency",
            "2",
        ],
    );
    assert_eq!(out["cmd"], "fairness", "{out}");
    for phase in ["solo", "beside_flood"] {
        let p = &out[phase];
        assert_eq!(p["jobs"], 4, "{out}");
        let (first, max) = (
            p["first_ms"].as_f64().unwrap(),
            p["max_ms"].as_f64().unwrap(),
        );
        let rest = p["p99_after_first_ms"].as_f64().unwrap();
        assert!(first > 0.0 && first <= max && rest <= max, "{phase}: {out}");
        assert!(
            first == max || rest == max,
            "the max is the first or one of the rest: {out}"
        );
    }
    let solo_p99 = out["solo"]["p99_ms"].as_f64().unwrap();
    let target = out["target_p99_ms"].as_f64().unwrap();
    assert!(
        (target - (5.0 + solo_p99)).abs() < 1e-6,
        "D + solo p99: {out}"
    );
}

/// `resume`: durable `await-signal` jobs wait (no slot held), are signalled one at a
/// time and complete on their first attempt, each with the signal's payload.
#[sqlx::test(migrations = false)]
async fn resume_signals_each_waiting_job_and_it_completes_on_its_first_attempt(pool: PgPool) {
    let sluice = Sluice::new(&pool);
    let out = bench(&sluice, &["resume", "--jobs", "10"]);
    assert_eq!(out["cmd"], "resume", "{out}");
    assert_eq!(out["m"], 10, "{out}");
    assert!(out["p50_ms"].as_f64().unwrap() > 0.0, "{out}");
    let completed = count(
        &pool,
        "SELECT count(*) FROM sluice.jobs WHERE state = 'completed' AND attempt = 1 \
         AND convert_from(output, 'UTF8')::jsonb -> 'signal' ? 'i'",
    )
    .await;
    assert_eq!(completed, 15, "ten timed and five warm-up jobs");
}

/// `drain --task steps`: each job posts once to the bench's own receiver; `--durable`
/// journals each request and response (two entries a job, under the job's lease).
#[sqlx::test(migrations = false)]
async fn drain_of_steps_posts_once_per_job_and_durable_journals_each(pool: PgPool) {
    let sluice = Sluice::new(&pool);
    let drain = [
        "drain",
        "--task",
        "steps",
        "--jobs",
        "40",
        "--concurrency",
        "4",
    ];
    let mut durable = drain.to_vec();
    durable.push("--durable");
    let out = bench(&sluice, &durable);
    assert_eq!(out["cmd"], "work", "{out}");
    assert_eq!(out["task"], "durable-steps", "{out}");
    assert_eq!(out["durable"], true, "{out}");
    assert_eq!(out["requests"], 40, "one request per job: {out}");
    assert_eq!(out["pending_after"], 0, "{out}");
    let journaled = count(
        &pool,
        "SELECT count(DISTINCT job_id) FROM sluice.journal WHERE kind = 'http'",
    )
    .await;
    assert_eq!(journaled, 40, "every job journaled its request");
}

/// `replay`: durable-steps live and then replayed from its journal; no replayed call
/// leaves the host (the bench checks it), and the figures are there.
#[sqlx::test(migrations = false)]
async fn replay_reports_live_and_replayed_cost_per_call(pool: PgPool) {
    let sluice = Sluice::new(&pool);
    let out = bench(&sluice, &["replay", "--calls", "3", "--iterations", "2"]);
    assert_eq!(out["cmd"], "replay", "{out}");
    assert_eq!(out["calls"], 3, "{out}");
    assert!(out["journal_entries"].as_u64().unwrap() >= 3, "{out}");
    for field in ["empty_p50_us", "live_p50_us", "replay_p50_us"] {
        assert!(out[field].as_f64().unwrap() > 0.0, "{field}: {out}");
    }
    assert!(out["replay_per_call_us"].is_number(), "{out}");
}

/// Flow control in the drain: keys round-robin under a per-key cap and a rate that does
/// not bind; every job completes once. And the claim latency with keys held at their
/// cap: one job of each runs, the rest wait, and the timed claims pass them by.
#[sqlx::test(migrations = false)]
async fn drain_and_backlog_run_under_flow_controls(pool: PgPool) {
    let sluice = Sluice::new(&pool);
    let out = bench(
        &sluice,
        &[
            "drain",
            "--jobs",
            "120",
            "--concurrency",
            "4",
            "--keys",
            "10",
            "--max-running-per-key",
            "1",
            "--rate",
            "100000/1s",
        ],
    );
    assert_eq!(
        (out["keys"].clone(), out["n"].clone()),
        (10.into(), 120.into()),
        "{out}"
    );
    assert_eq!(out["rate"], "100000/1s", "{out}");
    assert_eq!(out["pending_after"], 0, "{out}");
    let keyed = count(
        &pool,
        "SELECT count(*) FROM sluice.jobs WHERE state = 'completed' AND job_type = 'echo'",
    )
    .await;
    assert_eq!(keyed, 120);

    let out = bench(
        &sluice,
        &[
            "backlog",
            "--ready",
            "300",
            "--scheduled",
            "50",
            "--rounds",
            "3",
            "--held-keys",
            "20",
            "--held-jobs",
            "60",
        ],
    );
    assert_eq!(out["held_keys"], 20, "{out}");
    let held = count(
        &pool,
        "SELECT count(*) FROM sluice.jobs WHERE job_type = 'held' AND state = 'running'",
    )
    .await;
    assert_eq!(
        held, 20,
        "one running job per key, the claims took no other"
    );
    assert!(out["claim100_p50_ms"].as_f64().unwrap() > 0.0, "{out}");
}
