//! End to end through the real binary: migrate, upload components, define job types,
//! enqueue, run `sluice worker --drain`, and read the results back with `jobs`.

mod autogroup;
mod edges;
mod flags;
mod flow;
mod json_parity;
mod run;
mod test_cases;
mod wait;

use crate::support::{Sluice, sample};
use sqlx::PgPool;

#[sqlx::test(migrations = false)]
async fn migrate_creates_the_schema_and_is_a_no_op_the_second_time(pool: PgPool) {
    let sluice = Sluice::new(&pool);
    sluice.ok(&["migrate"]);
    let tables: i64 = sqlx::query_scalar(
        "select count(*) from information_schema.tables where table_schema = 'sluice'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert!(
        tables >= 4,
        "expected the sluice schema's tables, found {tables}"
    );
    let applied: i64 = sqlx::query_scalar("select count(*) from _sqlx_migrations")
        .fetch_one(&pool)
        .await
        .unwrap();
    sluice.ok(&["migrate"]);
    let again: i64 = sqlx::query_scalar("select count(*) from _sqlx_migrations")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(applied, again);
}

#[sqlx::test(migrations = false)]
async fn hundred_echo_jobs_complete_with_their_payloads_as_output(pool: PgPool) {
    let sluice = Sluice::new(&pool);
    sluice.ok(&["migrate"]);
    let echo = sample("echo");
    let pushed = sluice.json(&[
        "component",
        "push",
        echo.to_str().unwrap(),
        "--name",
        "echo",
    ]);
    assert_eq!(pushed["sha256"].as_str().unwrap().len(), 64);
    sluice.ok(&["types", "set", "echo", "--component", "echo"]);

    let dir = std::env::temp_dir().join(format!("sluice-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let jsonl = dir.join("jobs.jsonl");
    let lines: Vec<String> = (0..100).map(|i| format!("{{\"n\":{i}}}")).collect();
    std::fs::write(&jsonl, lines.join("\n")).unwrap();
    let enqueued = sluice.json(&["enqueue", "echo", "--bulk", jsonl.to_str().unwrap()]);
    assert_eq!(enqueued["enqueued"], 100);

    let summary = sluice.json(&["worker", "--drain", "--concurrency", "4"]);
    assert_eq!(summary["completed"], 100, "worker summary: {summary}");

    let jobs = sluice.json(&["jobs", "list", "--state", "completed", "--limit", "200"]);
    let jobs = jobs.as_array().unwrap();
    assert_eq!(jobs.len(), 100);
    // The listing carries sizes, not outputs (as `GET /v1/jobs` does): each job's output
    // is read with `jobs show`.
    let mut outputs: Vec<String> = jobs
        .iter()
        .map(|job| {
            assert_eq!(job["output_size"], job["payload_size"], "{job}");
            let shown = sluice.json(&["jobs", "show", &job["id"].to_string()]);
            shown["output"].to_string()
        })
        .collect();
    outputs.sort();
    let mut expected = lines.clone();
    expected.sort();
    assert_eq!(outputs, expected);
}

#[sqlx::test(migrations = false)]
async fn bad_uploads_and_unknown_types_are_refused_with_a_message(pool: PgPool) {
    let sluice = Sluice::new(&pool);
    sluice.ok(&["migrate"]);
    let dir = std::env::temp_dir().join(format!("sluice-e2e-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let junk = dir.join("junk.wasm");
    std::fs::write(&junk, b"definitely not wasm").unwrap();
    let out = sluice.run(&["component", "push", junk.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("junk.wasm"), "{stderr}");

    let out = sluice.run(&["enqueue", "no-such-type", "--payload", "{}"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no-such-type"), "{stderr}");

    let out = sluice.run(&["enqueue"]);
    assert_eq!(out.status.code(), Some(2), "usage errors exit 2");
    let components = sluice.json(&["component", "list"]);
    assert_eq!(components.as_array().unwrap().len(), 0, "nothing stored");
}

#[sqlx::test(migrations = false)]
async fn a_dead_job_can_be_inspected_and_retried_from_the_cli(pool: PgPool) {
    let sluice = Sluice::new(&pool);
    sluice.ok(&["migrate"]);
    let fatal = sample("fatal");
    sluice.ok(&["component", "push", fatal.to_str().unwrap()]);
    sluice.ok(&["types", "set", "fatal", "--component", "fatal"]);
    let job = sluice.json(&["enqueue", "fatal", "--payload", "{}"]);
    let id = job["id"].as_i64().unwrap().to_string();
    assert_eq!(job["created"], true);

    let summary = sluice.json(&["worker", "--drain"]);
    assert_eq!(summary["dead"], 1, "{summary}");
    let shown = sluice.json(&["jobs", "show", &id]);
    assert_eq!(shown["state"], "dead");
    let attempts = sluice.json(&["jobs", "attempts", &id]);
    assert_eq!(attempts.as_array().unwrap().len(), 1);
    let error = shown["last_error"].as_str().unwrap();
    assert!(error.starts_with("guest fatal:"), "{error}");

    sluice.ok(&["jobs", "retry", &id]);
    let shown = sluice.json(&["jobs", "show", &id]);
    assert_eq!(shown["state"], "pending");
    assert_eq!(shown["attempt"], 0);
    sluice.json(&["worker", "--drain"]);
    let out = sluice.json(&["jobs", "retry", "--all-dead", "--type", "fatal"]);
    assert_eq!(
        out["message"],
        "dead jobs retried: 1 (pending again with fresh attempts)"
    );
    let out = sluice.run(&["jobs", "show", "999999"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("999999"));
}

/// Issue 4, test 5: the whole operator script through the binary — push, types set,
/// enqueue, worker --drain, jobs show, retry of a dead job, component show and
/// `stats --json`, each parsed as JSON.
#[sqlx::test(migrations = false)]
async fn an_operator_script_runs_end_to_end_and_stats_add_up(pool: PgPool) {
    let sluice = Sluice::new(&pool);
    sluice.ok(&["migrate"]);
    let echo = sample("echo");
    let fatal = sample("fatal");
    let pushed = sluice.json(&[
        "component",
        "push",
        echo.to_str().unwrap(),
        "--name",
        "echo",
    ]);
    sluice.ok(&[
        "component",
        "push",
        fatal.to_str().unwrap(),
        "--name",
        "fatal",
    ]);
    let typed = sluice.json(&[
        "types",
        "set",
        "greet",
        "--component",
        "echo@1",
        "--timeout",
        "30s",
        "--memory",
        "64MiB",
        "--max-attempts",
        "5",
    ]);
    assert_eq!(typed["max_attempts"], 5);
    assert_eq!(typed["timeout_ms"], 30_000);
    sluice.ok(&[
        "types",
        "set",
        "doomed",
        "--component",
        "fatal",
        "--max-attempts",
        "2",
    ]);

    let shown = sluice.json(&["component", "show", "echo"]);
    assert_eq!(shown["sha256"], pushed["sha256"]);
    assert_eq!(shown["job_types"], serde_json::json!(["greet"]));
    let out = sluice.run(&["component", "show", "echo@9"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("echo@9") && stderr.lines().count() == 1,
        "one line naming the component: {stderr}"
    );

    let greet = sluice.json(&[
        "enqueue",
        "greet",
        "--payload",
        r#"{"hi":1}"#,
        "--priority",
        "high",
        "--idempotency-key",
        "greet-1",
    ]);
    let again = sluice.json(&[
        "enqueue",
        "greet",
        "--payload",
        r#"{"hi":2}"#,
        "--idempotency-key",
        "greet-1",
    ]);
    assert_eq!(
        (again["id"].clone(), again["created"].clone()),
        (greet["id"].clone(), false.into())
    );
    let doomed = sluice.json(&["enqueue", "doomed", "--payload", "{}"]);
    let later = sluice.json(&["enqueue", "greet", "--payload", "{}", "--delay", "1h"]);
    assert_eq!(later["created"], true);

    let before = sluice.json(&["stats"]);
    assert_eq!(before["totals"]["pending"], 3, "{before}");
    assert_eq!(before["totals"]["ready"], 2, "{before}");

    let summary = sluice.json(&["worker", "--drain", "--drain-horizon", "2s"]);
    assert_eq!(
        (summary["completed"].as_i64(), summary["dead"].as_i64()),
        (Some(1), Some(1)),
        "{summary}"
    );

    let greet_id = greet["id"].to_string();
    let job = sluice.json(&["jobs", "show", &greet_id]);
    assert_eq!(job["state"], "completed");
    assert_eq!(job["priority"], 20);
    let attempts = sluice.json(&["jobs", "attempts", &greet_id]);
    let attempts = attempts.as_array().unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0]["outcome"], "completed");
    assert!(attempts[0]["fuel_used"].as_i64().unwrap() > 0);

    let doomed_id = doomed["id"].to_string();
    let dead = sluice.json(&["jobs", "show", &doomed_id]);
    assert_eq!(dead["state"], "dead");
    assert_eq!(
        sluice
            .json(&["jobs", "attempts", &doomed_id])
            .as_array()
            .unwrap()
            .len(),
        1,
        "fatal: no retry"
    );

    let stats = sluice.json(&["stats"]);
    assert_eq!(stats["tenant"], "default");
    let totals = &stats["totals"];
    assert_eq!(
        (totals["completed"].as_i64(), totals["dead"].as_i64()),
        (Some(1), Some(1)),
        "{stats}"
    );
    assert_eq!(
        (totals["pending"].as_i64(), totals["ready"].as_i64()),
        (Some(1), Some(0)),
        "{stats}"
    );
    assert!(
        stats["oldest_ready_age_seconds"].is_null(),
        "nothing is ready: {stats}"
    );
    assert_eq!(stats["lease_expirations_last_hour"], 0);
    let types = stats["types"].as_array().unwrap();
    let row = |name: &str| {
        types
            .iter()
            .find(|t| t["job_type"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(row("doomed")["counts"]["dead"], 1);
    assert_eq!(row("greet")["counts"]["completed"], 1);

    sluice.ok(&["jobs", "retry", &doomed_id]);
    let stats = sluice.json(&["stats"]);
    assert_eq!(stats["totals"]["dead"], 0, "{stats}");
    assert_eq!(stats["totals"]["ready"], 1, "{stats}");
    let table = sluice.ok(&["stats"]);
    assert!(
        table.contains("doomed") && table.contains("greet"),
        "{table}"
    );

    let out = sluice.run(&["stats", "--no-such-flag"]);
    assert_eq!(out.status.code(), Some(2), "usage errors exit 2");
    let out = sluice.run(&[
        "enqueue",
        "greet",
        "--bulk",
        "x.jsonl",
        "--idempotency-key",
        "k",
    ]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a key names one job, not a bulk file"
    );
}

#[sqlx::test(migrations = false)]
async fn a_worker_on_an_unmigrated_database_stops_at_once_and_says_to_migrate(pool: PgPool) {
    let sluice = Sluice::new(&pool);
    let out = sluice.run(&["worker", "--drain"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no Sluice schema") && stderr.contains("sluice migrate"),
        "{stderr}"
    );
    sluice.ok(&["migrate"]);
    let summary = sluice.json(&["worker", "--drain"]);
    assert_eq!(summary["completed"], 0, "{summary}");
}
