//! `sluice jobs wait ID [--timeout]`: shows the job once finished, with an exit code per
//! end (0 completed, 3 dead, 4 cancelled, 124 when the timeout came first), woken by the
//! finish of a job a worker runs meanwhile.

use std::process::Stdio;
use std::time::Duration;

use sqlx::PgPool;

use crate::support::worker_process::WorkerProcess;
use crate::support::{Sluice, enqueue};

#[sqlx::test(migrations = false)]
async fn jobs_wait_shows_the_finished_job_and_exits_with_its_end(pool: PgPool) {
    let sluice = Sluice::with_type(&pool, "echo", "echo", &[]);
    sluice.define("fatal", "fatal", &[]);

    // Not finished within the timeout: 124, the job as it is.
    let id = enqueue(&sluice, "echo", serde_json::json!({"n": 5}));
    let out = sluice.run(&["--json", "jobs", "wait", &id, "--timeout", "300ms"]);
    assert_eq!(out.status.code(), Some(124), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let job: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(job["state"], "pending");

    // Waiting while a worker runs it: 0, and the output.
    let waiting = sluice
        .command(&["jobs", "wait", &id, "--timeout", "2m"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let mut worker = WorkerProcess::spawn(&sluice, "w1", &["--drain"]);
    let out = waiting.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("completed") && text.contains(r#"{"n":5}"#),
        "{text}"
    );
    assert!(worker.wait_timeout(Duration::from_secs(60)).is_some());

    // Dead: 3. Cancelled: 4. Missing: 1, naming the job.
    let dead = enqueue(&sluice, "fatal", serde_json::json!({}));
    let mut worker = WorkerProcess::spawn(&sluice, "w2", &["--drain"]);
    assert!(worker.wait_timeout(Duration::from_secs(60)).is_some());
    assert_eq!(sluice.run(&["jobs", "wait", &dead]).status.code(), Some(3));
    let cancelled = enqueue(&sluice, "echo", serde_json::json!({}));
    sluice.ok(&["jobs", "cancel", &cancelled]);
    assert_eq!(
        sluice.run(&["jobs", "wait", &cancelled]).status.code(),
        Some(4)
    );
    let out = sluice.run(&["jobs", "wait", "999999"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("job 999999 not found"));

    // `serve --max-wait` beyond the API's longest wait, or zero: refused, naming the flag.
    for bad in ["301s", "0s"] {
        let out = sluice.run(&["serve", "--listen", "127.0.0.1:0", "--max-wait", bad]);
        assert_eq!(out.status.code(), Some(1), "{bad}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("--max-wait must be more than 0 and at most 300s"),
            "{stderr}"
        );
    }
}
