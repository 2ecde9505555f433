//! Stored attempt logs end to end through the real binary: a `log-flood` job's lines come
//! back with their levels from `sluice jobs logs`, and a flood past the cap ends with
//! `… N bytes dropped`; a retried `flaky` job has one log per attempt and `--attempt N`
//! picks one; `echo` (no output) leaves no log row; another tenant gets "not found" for
//! a job's logs from the CLI and 404 from `GET /v1/jobs/{id}/attempts/{n}/logs`, exactly
//! as for a missing job. (Retention deleting logs with their job, and a stale lease
//! holder writing none, are store tests: `host/store/tests/it/attempt_logs.rs`.)

use crate::support::Sluice;
use crate::support::http::{Api, error_of, json};
use serde_json::{Value, json};
use sqlx::PgPool;

fn enqueue(sluice: &Sluice, job_type: &str, payload: Value) -> String {
    let job = sluice.json(&["enqueue", job_type, "--payload", &payload.to_string()]);
    job["id"].as_i64().expect("the new job's id").to_string()
}

fn drain(sluice: &Sluice) -> Value {
    sluice.json(&["worker", "--drain", "--drain-horizon", "2s"])
}

async fn log_rows(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM sluice.attempt_logs")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// `12,345`.
fn grouped(n: i64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[sqlx::test(migrations = false)]
async fn log_flood_lines_come_back_with_levels_and_a_cut_log_says_what_was_dropped(pool: PgPool) {
    let sluice = Sluice::migrated(&pool);
    sluice.define("flood", "log-flood", &["--max-log", "8KiB"]);
    // Three 1 KiB lines: stdout, stderr, host log (INFO).
    let small = enqueue(&sluice, "flood", json!({ "bytes": 3072 }));
    // 64 lines: far past the 8 KiB cap.
    let big = enqueue(&sluice, "flood", json!({ "bytes": 65536 }));
    assert_eq!(drain(&sluice)["completed"], 2);

    let text = sluice.ok(&["jobs", "logs", &small]);
    let line = "y".repeat(1023);
    assert!(
        text.starts_with("== attempt 1 · completed · started "),
        "{text:.200}"
    );
    for prefix in ["[stdout] ", "[stderr] ", "[INFO] "] {
        assert!(
            text.contains(&format!("\n{prefix}{line}\n")),
            "{prefix}: {text:.300}"
        );
    }
    assert!(!text.contains("dropped"), "{text:.300}");

    let logs = sluice.json(&["jobs", "logs", &big]);
    let attempt = &logs["attempts"][0];
    assert_eq!(attempt["truncated"], true, "{attempt:.300}");
    assert_eq!(attempt["log"].as_str().unwrap().len(), 8192);
    let dropped = attempt["dropped_bytes"].as_i64().unwrap();
    // 64 lines of 1024 bytes plus their prefixes, less the 8 KiB kept.
    assert!(dropped > 65536 - 8192, "{dropped}");
    let text = sluice.ok(&["jobs", "logs", &big]);
    assert!(
        text.ends_with(&format!("\n… {} bytes dropped\n", grouped(dropped))),
        "…{}",
        &text[text.len().saturating_sub(80)..]
    );
}

#[sqlx::test(migrations = false)]
async fn a_retried_job_has_one_log_per_attempt_and_attempt_n_picks_one(pool: PgPool) {
    let sluice = Sluice::migrated(&pool);
    sluice.define(
        "flaky",
        "flaky",
        &[
            "--max-attempts",
            "3",
            "--backoff-base",
            "10ms",
            "--backoff-cap",
            "10ms",
        ],
    );
    let id = enqueue(&sluice, "flaky", json!({ "succeed_on": 3 }));
    assert_eq!(drain(&sluice)["completed"], 1);

    let logs = sluice.json(&["jobs", "logs", &id]);
    let attempts = logs["attempts"].as_array().unwrap();
    let seen: Vec<(i64, &str)> = attempts
        .iter()
        .map(|a| {
            (
                a["attempt"].as_i64().unwrap(),
                a["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(seen, [(1, "retry"), (2, "retry"), (3, "completed")]);
    for (n, attempt) in (1..).zip(attempts) {
        let log = attempt["log"].as_str().unwrap();
        assert!(
            log.starts_with(&format!("[INFO] attempt {n} of job {id}\n")),
            "{log}"
        );
    }
    assert!(
        attempts[2]["log"]
            .as_str()
            .unwrap()
            .ends_with("[stdout] succeeding on attempt 3\n")
    );

    let text = sluice.ok(&["jobs", "logs", &id, "--attempt", "2"]);
    assert_eq!(
        text.lines().skip(1).collect::<Vec<_>>(),
        [
            format!("[INFO] attempt 2 of job {id}").as_str(),
            "[stderr] attempt 2 of 3 failed on purpose",
        ],
        "{text}"
    );
    assert!(text.starts_with("== attempt 2 · retry · "), "{text}");

    let none = sluice.run(&["jobs", "logs", &id, "--attempt", "4"]);
    assert!(!none.status.success());
    let stderr = String::from_utf8_lossy(&none.stderr);
    assert!(
        stderr.contains(&format!("job {id} has no attempt 4")),
        "{stderr}"
    );
}

#[sqlx::test(migrations = false)]
async fn an_attempt_that_logs_nothing_stores_nothing(pool: PgPool) {
    let sluice = Sluice::migrated(&pool);
    sluice.define("echo", "echo", &[]);
    let id = enqueue(&sluice, "echo", json!({ "hello": "world" }));
    assert_eq!(drain(&sluice)["completed"], 1);
    assert_eq!(log_rows(&pool).await, 0);
    assert_eq!(
        sluice.ok(&["jobs", "logs", &id]),
        format!("no attempt of job {id} logged anything\n")
    );
    let one = sluice.ok(&["jobs", "logs", &id, "--attempt", "1"]);
    assert!(one.ends_with("\n(logged nothing)\n"), "{one}");
    let logs = sluice.json(&["jobs", "logs", &id]);
    assert_eq!(logs["attempts"], json!([]));
}

#[sqlx::test(migrations = false)]
async fn another_tenant_gets_not_found_from_the_cli_and_the_api(pool: PgPool) {
    let sluice = Sluice::migrated(&pool);
    sluice.define(
        "flaky",
        "flaky",
        &["--max-attempts", "2", "--backoff-base", "10ms"],
    );
    sluice.ok(&["tenants", "create", "beta"]);
    let id = enqueue(&sluice, "flaky", json!({ "succeed_on": 2 }));
    assert_eq!(drain(&sluice)["completed"], 1);

    // CLI: beta is told exactly what it is told for a job that does not exist.
    let stderr_of = |tenant: &str, job: &str| {
        let out = sluice.run(&["--tenant", tenant, "jobs", "logs", job]);
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).replace(job, "ID")
    };
    let foreign = stderr_of("beta", &id);
    assert!(
        foreign.contains("job ID not found for tenant `beta`"),
        "{foreign}"
    );
    assert_eq!(foreign, stderr_of("beta", "999999"));

    // HTTP.
    let api = Api::start(&pool).await;
    let owner = api.tenant("default").await;
    let other = api.tenant("beta").await;
    let path = |job: &str, n: &str| format!("/v1/jobs/{job}/attempts/{n}/logs");
    let (status, body) = json(api.get(&path(&id, "1"), &owner).await).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["attempt"], 1);
    assert_eq!(body["outcome"], "retry");
    assert_eq!(body["truncated"], false);
    assert_eq!(
        body["log"],
        format!("[INFO] attempt 1 of job {id}\n[stderr] attempt 1 of 2 failed on purpose\n")
    );
    let (status, body) = json(api.get(&path(&id, "2"), &owner).await).await;
    assert_eq!((status, body["outcome"].as_str()), (200, Some("completed")));

    let (status, foreign) = json(api.get(&path(&id, "1"), &other).await).await;
    let (missing_status, missing) = json(api.get(&path("999999", "1"), &other).await).await;
    assert_eq!((status, missing_status), (404, 404));
    assert_eq!(error_of(&foreign).0, error_of(&missing).0);
    assert_eq!(
        error_of(&foreign).1.replace(&id, "ID"),
        error_of(&missing).1.replace("999999", "ID")
    );
    let (status, body) = json(api.get(&path(&id, "3"), &owner).await).await;
    assert_eq!(status, 404, "{body}");
    assert!(error_of(&body).1.contains("has no attempt 3"), "{body}");
    let (status, _) = json(api.get(&path(&id, "x"), &owner).await).await;
    assert_eq!(status, 400);
}
