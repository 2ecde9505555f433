//! The OpenAPI document is the API. A real `sluice serve` runs over the test's own
//! database, seeded with a component, job types, jobs in every state and a schedule;
//! schemathesis (pinned, installed into `.toolchains/` by `scripts/test`) reads the
//! document that server serves, generates requests for every operation from it — valid
//! ones and, on purpose, invalid ones, alone and chained along the document's links —
//! and checks every answer: never a 5xx, a status
//! the operation documents, the documented content type and headers, a body matching
//! the documented schema; a request the document forbids is refused
//! (`negative_data_rejection`) and one it allows is not refused for its form
//! (`positive_data_acceptance`: the document is as strict as the server). The server has
//! a secrets key, so webhook and secrets routes answer for real; an upload's generated
//! body is a real component (`tests/e2e/openapi/sluice_hooks.py`). Any failure fails
//! this test with schemathesis' report.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::support::serve_process::ServeProcess;
use crate::support::{Fixture, Sluice, repo_root, sample};
use sluice_store::{Completion, JobTypeSpec, KeyScope, NewSchedule};
use sqlx::PgPool;

/// Test cases per operation and phase: bounded so that the whole test stays within a
/// few minutes on two slow cores. `SLUICE_OPENAPI_EXAMPLES` raises it for a deeper run.
const DEFAULT_EXAMPLES: &str = "50";

/// The checks run on every answer (schemathesis' names). `positive_data_acceptance`: a
/// request the document allows is not refused with 400 (or any status but 2xx, 3xx,
/// 401, 403, 404, 409, 429), so the document is as strict as the server.
const CHECKS: &str = "not_a_server_error,status_code_conformance,content_type_conformance,\
response_headers_conformance,response_schema_conformance,negative_data_rejection,\
positive_data_acceptance";

/// Where `scripts/test` installs schemathesis (`ensure_schemathesis` in
/// scripts/lib/toolchains.sh).
fn schemathesis() -> PathBuf {
    let path = repo_root().join(".toolchains/bin/schemathesis");
    assert!(
        path.exists(),
        "schemathesis is not installed at {}: run scripts/test, which installs it, or just its \
         install step: bash -c 'source scripts/lib/toolchains.sh && ensure_schemathesis'",
        path.display()
    );
    path
}

/// A tenant with a token, a component, job types, jobs in every state and a schedule,
/// so that reads answer real rows. Returns the token.
async fn seed(pool: &PgPool) -> String {
    // "0" is a name generators try early, so some generated enqueues find a type.
    let mut fixture = Fixture::new(pool).tenant("acme");
    for name in ["echo", "0"] {
        fixture = fixture.job_type_with(name, "echo", |spec| JobTypeSpec {
            fuel: Some(1_000_000),
            timeout: Some(Duration::from_secs(5)),
            ..spec
        });
    }
    let fixture = fixture.await;
    let store = &fixture.store;
    let token = store
        .create_token("acme", false, Some("openapi"))
        .await
        .unwrap()
        .token;
    // Two pending, then one running, one dead and one completed (with output): each
    // claim takes the highest priority, the job just made; then one cancelled.
    let jobs = fixture
        .jobs()
        .worker("openapi-test")
        .lease(Duration::from_secs(3600));
    let payloads: [&[u8]; 5] = [b"{}", b"[1, 2]", b"\"text\"", b"not json", b"{\"n\": 1.5}"];
    let seeded = |i: usize| {
        let job = fixture
            .job("echo", payloads[i])
            .with_priority([-5, 0, 10, 20, 30][i]);
        if i.is_multiple_of(2) {
            job.with_idempotency_key(format!("seed-{i}"), KeyScope::Unfinished)
        } else {
            job
        }
    };
    jobs.pending(seeded(0)).await;
    jobs.pending(seeded(1)).await;
    jobs.running(seeded(2)).await;
    jobs.dead(seeded(3), "the seed failed it").await;
    jobs.completed_with(
        seeded(4),
        Completion {
            output: br#"{"echo": true}"#.to_vec(),
            fuel_used: Some(42),
            follow_ups: Vec::new(),
            log: None,
        },
    )
    .await;
    jobs.cancelled(fixture.job("echo", "{}")).await;

    let mut schedule = NewSchedule::new("acme", "nightly", "0 3 * * *", "echo");
    schedule.tz = "Europe/Paris".into();
    schedule.max_attempts = Some(2);
    store.create_schedule(&schedule).await.unwrap();
    let paused = NewSchedule::new("acme", "paused", "*/5 * * * *", "echo");
    store.create_schedule(&paused).await.unwrap();
    store.pause_schedule("acme", "paused").await.unwrap();
    token
}

/// Jobs stored for tenant `acme`.
async fn job_count(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM sluice.jobs WHERE tenant = 'acme'")
        .fetch_one(pool)
        .await
        .unwrap()
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn every_answer_of_sluice_serve_matches_its_openapi_document(pool: PgPool) {
    let _quiet = crate::support::quiet_machine().await;
    let schemathesis = schemathesis();
    let token = seed(&pool).await;
    let jobs_before = job_count(&pool).await;

    let sluice = Sluice::new(&pool);
    let db = pool
        .connect_options()
        .get_database()
        .unwrap_or("db")
        .to_owned();
    // A wait answers within a second here (schemathesis waits 30 s for an answer, and
    // generates waits up to the document's 300 s for jobs no worker runs).
    let server = ServeProcess::start_with(&sluice, &format!("openapi-{db}"), &["--max-wait", "1s"]);
    let work = std::env::temp_dir().join(format!("sluice-openapi-{db}"));
    std::fs::create_dir_all(&work).unwrap();
    let examples =
        std::env::var("SLUICE_OPENAPI_EXAMPLES").unwrap_or_else(|_| DEFAULT_EXAMPLES.into());
    let seed = std::env::var("SLUICE_OPENAPI_SEED").unwrap_or_else(|_| "20261201".into());
    let args = [
        "run".to_owned(),
        format!("{}/v1/openapi.json", server.base),
        format!("--checks={CHECKS}"),
        format!("--header=Authorization: Bearer {token}"),
        format!("--max-examples={examples}"),
        format!("--seed={seed}"),
        // Stateful: follows the document's links (a created job's id, a schedule's name).
        "--phases=examples,coverage,fuzzing,stateful".into(),
        "--mode=all".into(),
        "--workers=1".into(),
        "--request-timeout=30".into(),
        "--generation-database=none".into(),
        "--no-color".into(),
    ];
    let output = tokio::task::spawn_blocking({
        let (work, args) = (work.clone(), args.clone());
        move || {
            Command::new(&schemathesis)
                .args(&args)
                .current_dir(work)
                .env("NO_COLOR", "1")
                // Uploads' positive bodies are a real component (tests/e2e/openapi/).
                .env("SCHEMATHESIS_HOOKS", "sluice_hooks")
                .env("PYTHONPATH", repo_root().join("tests/e2e/openapi"))
                .env("SLUICE_OPENAPI_COMPONENT", sample("echo"))
                .env("COLUMNS", "160")
                .output()
                .expect("run schemathesis")
        }
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "schemathesis found answers that do not match the OpenAPI document \
         (reproduce: SLUICE_OPENAPI_SEED={seed}, schemathesis {}):\n{stdout}\n{stderr}\n\
         --- sluice serve log (errors) ---\n{}",
        args.join(" "),
        server
            .log_text()
            .lines()
            .filter(|l| l.contains("\"ERROR\"") || l.contains("\"WARN\""))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The run was not vacuous: every operation was tested, and generated requests
    // created jobs through the API.
    assert!(
        !stdout.contains("No operations"),
        "schemathesis tested nothing:\n{stdout}"
    );
    let jobs_after = job_count(&pool).await;
    assert!(
        jobs_after > jobs_before,
        "no generated request enqueued a job ({jobs_before} before and after):\n{stdout}"
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&work);
}
