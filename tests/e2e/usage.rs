//! Usage metering and daily quotas through the real binary, real components and real
//! Postgres (docs/usage.md): a drain's runs, fuel and outbound requests show in `sluice
//! usage` for their tenant only; a daily attempts quota leaves the rest of a tenant's
//! jobs pending, with the reason shown and no attempt spent, until it is raised.

use serde_json::{Value, json};
use sluice_store::{NewJob, Store};
use sqlx::PgPool;

use crate::egress_support::{Reply, TestServer};
use crate::support::{Sluice, sample, show};

/// The operator's opening for the test server, and nothing else.
const LOOPBACK: &str = "127.0.0.1/32";

/// Enqueues `n` jobs of `job_type` for `tenant` with `payload`, in one statement.
async fn enqueue_n(pool: &PgPool, tenant: &str, job_type: &str, payload: &Value, n: usize) {
    let jobs: Vec<NewJob> = (0..n)
        .map(|_| NewJob::new(tenant, job_type, payload.to_string().into_bytes()))
        .collect();
    Store::new(pool.clone()).enqueue_many(&jobs).await.unwrap();
}

/// The row of `job_type` in `sluice usage --by type --json` (of `args`' tenant).
fn usage_of(sluice: &Sluice, args: &[&str], job_type: &str) -> Value {
    let mut all = vec!["usage", "--by", "type"];
    all.extend_from_slice(args);
    let report = sluice.json(&all);
    report["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["job_type"] == job_type)
        .cloned()
        .unwrap_or_else(|| panic!("no {job_type} in {report}"))
}

#[sqlx::test(migrations = false)]
async fn a_drains_runs_fuel_and_outbound_requests_show_for_their_tenant_only(pool: PgPool) {
    // The server on its own runtime: this test's thread blocks on the binary.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let handle = runtime.handle().clone();
    let server = std::thread::spawn(move || {
        handle.block_on(TestServer::start(Reply::Respond {
            status: 200,
            headers: vec![],
            body: vec![b'a'; 1000],
        }))
    })
    .join()
    .unwrap();
    let origin = format!("http://127.0.0.1:{}", server.port());

    let sluice = Sluice::migrated(&pool);
    sluice.define("echo", "echo", &[]);
    sluice.define(
        "get",
        "http-get",
        &["--allow-http", &origin, "--egress-allow-network", LOOPBACK],
    );
    sluice.ok(&["tenants", "create", "other"]);
    let echo = sample("echo");
    let echo = echo.to_str().unwrap();
    sluice.ok(&[
        "--tenant",
        "other",
        "component",
        "push",
        echo,
        "--name",
        "echo",
    ]);
    sluice.ok(&[
        "--tenant",
        "other",
        "types",
        "set",
        "echo",
        "--component",
        "echo",
    ]);
    let payload = json!({ "hello": "world" });
    enqueue_n(&pool, "default", "echo", &payload, 100).await;
    enqueue_n(
        &pool,
        "default",
        "get",
        &json!({ "url": origin.clone() + "/x" }),
        10,
    )
    .await;
    enqueue_n(&pool, "other", "echo", &payload, 7).await;
    sluice.ok(&["worker", "--drain", "--egress-allow-network", LOOPBACK]);
    assert_eq!(server.requests().len(), 10);

    let echo = usage_of(&sluice, &[], "echo");
    assert_eq!(echo["tenant"], "default", "{echo}");
    assert_eq!(echo["runs"], 100, "{echo}");
    assert!(echo["fuel"].as_i64().unwrap() > 0, "{echo}");
    assert!(echo["peak_memory_bytes"].as_i64().unwrap() > 0, "{echo}");
    let payload_bytes = payload.to_string().len() as i64;
    assert_eq!(echo["payload_bytes"], 100 * payload_bytes, "{echo}");
    assert_eq!(
        echo["output_bytes"],
        100 * payload_bytes,
        "echo echoes: {echo}"
    );
    assert_eq!(echo["http_requests"], 0, "{echo}");

    let get = usage_of(&sluice, &[], "get");
    assert_eq!(
        (get["runs"].as_i64(), get["http_requests"].as_i64()),
        (Some(10), Some(10)),
        "{get}"
    );
    assert_eq!(get["http_bytes_in"], 10 * 1000, "{get}");

    // The other tenant's runs are its own, and an operator sees both.
    let theirs = usage_of(&sluice, &["--tenant", "other"], "echo");
    assert_eq!(theirs["runs"], 7, "{theirs}");
    let all = sluice.json(&["usage", "--all-tenants"]);
    let runs: Vec<(String, i64)> = all["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["tenant"].as_str().unwrap().to_owned(),
                r["runs"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(runs, [("default".to_owned(), 110), ("other".to_owned(), 7)]);
    let people = sluice.ok(&["usage", "--by", "hour"]);
    assert!(
        people.contains("default") && people.contains("110"),
        "{people}"
    );
    let refused = sluice.run(&["usage", "--since", "yesterday"]);
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("`since`"), "{said}");
    runtime.shutdown_background();
}

#[sqlx::test(migrations = false)]
async fn an_attempts_quota_holds_the_rest_pending_until_raised_and_kills_nothing(pool: PgPool) {
    let sluice = Sluice::migrated(&pool);
    sluice.define("echo", "echo", &["--max-attempts", "1"]);
    let limits = sluice.json(&[
        "tenants",
        "limits",
        "default",
        "--max-attempts-per-day",
        "3",
    ]);
    assert_eq!(limits["max_attempts_per_day"], 3, "{limits}");
    enqueue_n(&pool, "default", "echo", &json!({ "n": 1 }), 5).await;
    sluice.ok(&["worker", "--drain"]);

    let jobs = sluice.json(&["jobs", "list"]);
    let states = |jobs: &Value, state: &str| -> Vec<String> {
        jobs.as_array()
            .expect("jobs")
            .iter()
            .filter(|j| j["state"] == state)
            .map(|j| j["id"].to_string())
            .collect()
    };
    assert_eq!(states(&jobs, "completed").len(), 3, "{jobs}");
    let pending = states(&jobs, "pending");
    assert_eq!(pending.len(), 2, "{jobs}");
    for id in &pending {
        let job = show(&sluice, id);
        assert_eq!(job["attempt"], 0, "no attempt spent: {job}");
        let held = job["held"].as_str().unwrap_or_default();
        assert!(
            held.starts_with("daily attempts quota reached (3/3); resumes at "),
            "{job}"
        );
    }
    let people = sluice.ok(&["tenants", "show", "default"]);
    assert!(people.contains("attempts per day"), "{people}");

    sluice.ok(&[
        "tenants",
        "limits",
        "default",
        "--max-attempts-per-day",
        "10",
    ]);
    sluice.ok(&["worker", "--drain"]);
    let jobs = sluice.json(&["jobs", "list"]);
    assert_eq!(states(&jobs, "completed").len(), 5, "{jobs}");
    assert!(states(&jobs, "dead").is_empty(), "{jobs}");
}
