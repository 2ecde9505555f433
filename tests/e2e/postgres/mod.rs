//! Production PostgreSQL (issue #39, docs/postgres.md): TLS with every `sslmode`
//! (`tls`), a transaction pooler in front (`pgbouncer`), and a primary that fails over
//! under a draining fleet (`failover`). Each starts its own throwaway servers; the TLS
//! server is one per test run, shared by its tests, each in its own database.
//!
//! Must not: touch the server of `DATABASE_URL` (these tests configure theirs), or skip
//! silently: a test that cannot get its package (pgbouncer, pg_auto_failover) says why.

mod failover;
mod formation;
mod pgbouncer;
mod tls;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use sqlx::PgPool;

/// `which name`, or the reason the test skips, printed.
pub fn tool(name: &str, package: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .chain([PathBuf::from("/usr/sbin")])
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        eprintln!(
            "SKIPPED: `{name}` is not installed (Debian package {package}; scripts/test \
             installs it through scripts/lib/postgres-tools.sh when it runs as root)"
        );
    }
    found
}

/// Waits until `jobs` jobs are `completed`, or panics after `limit` with the states
/// seen. Reads through `pool`, retrying through outages.
pub async fn wait_all_completed(pool: &PgPool, jobs: i64, limit: Duration) -> Duration {
    let start = tokio::time::Instant::now();
    loop {
        let states: Result<Vec<(String, i64)>, _> =
            sqlx::query_as("SELECT state::text, count(*) FROM sluice.jobs GROUP BY 1 ORDER BY 1")
                .fetch_all(pool)
                .await;
        if let Ok(states) = &states
            && states.iter().any(|(s, n)| s == "completed" && *n == jobs)
        {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < limit,
            "not all {jobs} jobs completed within {limit:?}: {states:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A file in `dir`, written with `contents`.
pub fn write(dir: &Path, name: &str, contents: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, contents).expect("write a test file");
    path
}

/// The `postgres` user's uid and gid when this process runs as root (PgBouncer and
/// PostgreSQL refuse to run as root).
pub fn postgres_user_if_root() -> Option<(u32, u32)> {
    let id = |args: &[&str]| -> Option<u32> {
        let out = Command::new("id").args(args).output().ok()?;
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    };
    if id(&["-u"])? != 0 {
        return None;
    }
    Some((id(&["-u", "postgres"])?, id(&["-g", "postgres"])?))
}
