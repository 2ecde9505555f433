//! Cron schedules end to end: three real `sluice worker` processes, each running its
//! scheduler, share a every-second schedule of the `echo` sample for a few seconds.
//! Every slot enqueues exactly one job, no slot in between is missed, and the jobs run.
//! Also the `schedules` verbs through the binary.

use std::collections::BTreeSet;
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::support::{Sluice, wait_for};
use chrono::{DateTime, TimeDelta, Utc};
use sqlx::PgPool;

fn spawn_worker(sluice: &Sluice, name: &str) -> Child {
    sluice
        .command(&[
            "worker",
            "--worker-id",
            name,
            "--concurrency",
            "2",
            "--scheduler-interval",
            "1s",
            "--poll-interval",
            "200ms",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start a sluice worker")
}

fn terminate(child: &mut Child) {
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());
}

#[sqlx::test(migrations = false)]
async fn three_workers_fire_each_second_slot_exactly_once(pool: PgPool) {
    let sluice = Sluice::with_type(&pool, "echo", "echo", &[]);
    let created = sluice.json(&[
        "schedules",
        "create",
        "tick",
        "--cron",
        "*/1 * * * * *",
        "--type",
        "echo",
        "--payload",
        r#"{"from":"schedule"}"#,
        "--catch-up",
        "all",
    ]);
    assert_eq!(created["catch_up"], "all");

    let mut workers: Vec<Child> = (0..3)
        .map(|i| spawn_worker(&sluice, &format!("host-{i}")))
        .collect();
    // Let several slots pass with all three schedulers running (not a timing assertion:
    // the checks below hold for any number of slots).
    tokio::time::sleep(Duration::from_millis(4500)).await;
    sluice.ok(&["schedules", "pause", "tick"]);

    // Every enqueued job runs to completion on the fleet.
    wait_for(
        "scheduled jobs to complete",
        Duration::from_secs(60),
        || {
            let pool = pool.clone();
            async move {
                let open: i64 = sqlx::query_scalar(
                    "SELECT count(*) FROM sluice.jobs WHERE state <> 'completed'",
                )
                .fetch_one(&pool)
                .await
                .unwrap();
                (open == 0).then_some(())
            }
        },
    )
    .await;
    for worker in &mut workers {
        terminate(worker);
    }
    for worker in &mut workers {
        let status = worker.wait().unwrap();
        assert!(status.success(), "worker exited with {status}");
    }

    let slots: Vec<(DateTime<Utc>, i64, DateTime<Utc>)> = sqlx::query_as(
        "SELECT s.slot, s.job_id, j.run_at FROM sluice.schedule_slots s \
         JOIN sluice.jobs j ON j.id = s.job_id ORDER BY s.slot",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let jobs: i64 = sqlx::query_scalar("SELECT count(*) FROM sluice.jobs")
        .fetch_one(&pool)
        .await
        .unwrap();
    println!("{} slots fired by 3 workers, {jobs} jobs", slots.len());
    assert!(slots.len() >= 3, "several slots fired: {slots:?}");
    assert_eq!(jobs as usize, slots.len(), "exactly one job per slot");
    let distinct: BTreeSet<DateTime<Utc>> = slots.iter().map(|s| s.0).collect();
    assert_eq!(distinct.len(), slots.len());
    for pair in slots.windows(2) {
        assert_eq!(
            pair[1].0 - pair[0].0,
            TimeDelta::seconds(1),
            "no slot missed"
        );
    }
    for (slot, _, run_at) in &slots {
        assert_eq!(slot, run_at, "without jitter a job runs at its slot");
    }

    let shown = sluice.json(&["schedules", "show", "tick"]);
    assert_eq!(shown["fired_count"], slots.len() as i64);
    assert_eq!(shown["skipped_count"], 0);
    assert_eq!(shown["paused"], true);
    let listed = sluice.json(&["schedules", "list"]);
    assert_eq!(listed.as_array().unwrap().len(), 1);
}

#[sqlx::test(migrations = false)]
async fn schedules_verbs_refuse_bad_input_and_manage_a_schedule(pool: PgPool) {
    let sluice = Sluice::with_type(&pool, "echo", "echo", &[]);
    sluice.ok(&["tenants", "create", "acme"]);

    let bad = sluice.run(&[
        "schedules",
        "create",
        "x",
        "--cron",
        "* * 32 * *",
        "--type",
        "echo",
    ]);
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("cron") && stderr.contains("* * 32 * *"),
        "{stderr}"
    );
    let bad = sluice.run(&[
        "schedules",
        "create",
        "x",
        "--cron",
        "@daily",
        "--tz",
        "Europe/Parris",
        "--type",
        "echo",
    ]);
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("Europe/Parris"), "{stderr}");
    assert_eq!(sluice.json(&["schedules", "list"]), serde_json::json!([]));

    let created = sluice.json(&[
        "schedules",
        "create",
        "nightly",
        "--cron",
        "0 3 * * *",
        "--tz",
        "Europe/Paris",
        "--type",
        "echo",
        "--jitter",
        "30s",
        "--catch-up",
        "none",
    ]);
    assert_eq!(created["tz"], "Europe/Paris");
    assert_eq!(created["jitter_ms"], 30_000);
    assert_eq!(created["catch_up"], "none");
    let table = sluice.ok(&["schedules", "show", "nightly"]);
    assert!(table.contains("skipped (missed)"), "{table}");
    // Per tenant: another tenant does not see it.
    let other = sluice.json(&["--tenant", "acme", "schedules", "list"]);
    assert_eq!(other, serde_json::json!([]));
    assert_eq!(
        sluice.json(&["schedules", "pause", "nightly"])["paused"],
        true
    );
    assert_eq!(
        sluice.json(&["schedules", "resume", "nightly"])["paused"],
        false
    );
    sluice.ok(&["schedules", "delete", "nightly"]);
    let gone = sluice.run(&["schedules", "show", "nightly"]);
    assert!(!gone.status.success());
}
