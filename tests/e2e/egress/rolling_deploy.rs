//! A rolling deploy across contracts: a host limited to contract 0.1
//! (`--max-contract 0.1`) leaves 0.2 jobs pending without claiming them or spending an
//! attempt, and a full host then runs 0.1 and 0.2 components side by side.

use std::time::Duration;

use super::*;
use crate::support::worker_process::WorkerProcess;
use crate::support::{Sluice, enqueue, output, show, wait_for};
use sqlx::PgPool;

#[sqlx::test(migrations = false)]
async fn a_host_limited_to_0_1_leaves_0_2_jobs_pending_for_a_newer_host(pool: PgPool) {
    let servers = Servers::new();
    let server = servers.start(Reply::ok("hello"));
    let sluice = Sluice::migrated(&pool);
    let origin = format!("http://127.0.0.1:{}", server.port());
    sluice.define("echo", "echo", &[]);
    sluice.define(
        "fetch",
        "http-get",
        &["--allow-http", &origin, "--egress-allow-network", LOOPBACK],
    );
    let components = sluice.json(&["component", "list"]);
    let contract_of = |name: &str| {
        components
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .map(|c| c["contract"].clone())
            .unwrap()
    };
    assert_eq!(
        (contract_of("echo"), contract_of("http-get")),
        ("sluice:task@0.1.0".into(), "sluice:task@0.2.0".into())
    );

    let newer = enqueue(
        &sluice,
        "fetch",
        serde_json::json!({ "url": format!("{origin}/ok") }),
    );
    let older = enqueue(&sluice, "echo", serde_json::json!({ "n": 1 }));
    let mut old_host = WorkerProcess::spawn(
        &sluice,
        "old-host",
        &[
            "--max-contract",
            "0.1",
            "--egress-allow-network",
            LOOPBACK,
            "--poll-interval",
            "100ms",
        ],
    );
    wait_for(
        "the old host to run the 0.1 job",
        Duration::from_secs(30),
        || async { (show(&sluice, &older)["state"] == "completed").then_some(()) },
    )
    .await;
    // Several claims later, the 0.2 job is still untouched.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let job = &sluice.json(&["jobs", "show", &newer]);
    assert_eq!(
        (job["state"].as_str(), job["attempt"].as_i64()),
        (Some("pending"), Some(0)),
        "{job}"
    );
    // Never claimed: no attempt was started and given back either.
    let attempts = sluice.json(&["jobs", "attempts", &newer]);
    assert_eq!(attempts, serde_json::json!([]), "{attempts}");
    old_host.signal("TERM");
    assert!(
        old_host
            .wait_timeout(Duration::from_secs(20))
            .is_some_and(|s| s.success())
    );
    assert_eq!(server.accepts(), 0);

    // The newer host runs both contracts side by side in one drain.
    let older_again = enqueue(&sluice, "echo", serde_json::json!({ "n": 2 }));
    let summary = sluice.json(&["worker", "--drain", "--egress-allow-network", LOOPBACK]);
    assert_eq!(summary["completed"], 2, "{summary}");
    let job = show(&sluice, &newer);
    assert_eq!(
        (job["state"].as_str(), job["attempt"].as_i64()),
        (Some("completed"), Some(1))
    );
    assert_eq!(output(&job)["status"], 200);
    assert_eq!(show(&sluice, &older_again)["state"], "completed");
    assert_eq!(server.requests().len(), 1);
}
