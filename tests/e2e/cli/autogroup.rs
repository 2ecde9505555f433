//! `sluice worker --autogroup-nice` (issue #22): a worker in its own session lowers its
//! CPU weight against other sessions' processes (a PostgreSQL on the same machine), and
//! one that shares the session that started it is refused before it runs anything, told
//! to use `setsid`.

use std::process::Command;

use sqlx::PgPool;

use crate::support::Sluice;

fn autogroups_scheduled() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/sched_autogroup_enabled")
        .is_ok_and(|enabled| enabled.trim() == "1")
}

#[sqlx::test(migrations = false)]
async fn autogroup_nice_lowers_a_worker_in_its_own_session_and_refuses_a_shared_one(pool: PgPool) {
    let sluice = Sluice::new(&pool);
    sluice.ok(&["migrate"]);
    let worker = ["worker", "--drain", "--autogroup-nice", "7"];

    // Started by this test, the worker shares the test's session.
    let shared = sluice.run(&worker);
    let stderr = String::from_utf8_lossy(&shared.stderr);
    assert_eq!(shared.status.code(), Some(1), "{stderr}");
    let expected = if autogroups_scheduled() {
        "setsid sluice"
    } else {
        "CPUWeight="
    };
    assert!(stderr.contains(expected), "{stderr}");
    assert!(!stderr.contains("drained"), "nothing may run: {stderr}");

    if !autogroups_scheduled() {
        return;
    }
    // In a session of its own (setsid forks when it must, so the worker leads it).
    let own = Command::new("setsid")
        .arg("--wait")
        .arg(env!("CARGO_BIN_EXE_sluice"))
        .args(worker)
        .env("DATABASE_URL", &sluice.url)
        .env("SLUICE_CACHE_DIR", &sluice.cache)
        .env("SLUICE_LOG", "info")
        .output()
        .expect("run sluice under setsid (util-linux)");
    let stderr = String::from_utf8_lossy(&own.stderr);
    assert!(own.status.success(), "{stderr}");
    assert!(
        stderr.contains("lowered this worker's CPU weight") && stderr.contains("nice 7"),
        "the kernel reports the new nice value: {stderr}"
    );
}
