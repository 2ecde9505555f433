//! The CLI at the edges (issue #16): every verb says what to do when the database is
//! unreachable or has no schema, instants and delays out of range are refused naming
//! the field, `--timeout 0` means no wall-clock timeout, fuel still bounding the
//! attempt, and a worker with more slots than a sandbox holds is refused.

use sqlx::PgPool;

use crate::support::{Sluice, sample};

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Every verb but `migrate`, on a database without the schema: exit 1 and one line
/// saying to run `sluice migrate`, never a raw "relation does not exist".
#[sqlx::test(migrations = false)]
async fn every_verb_on_an_unmigrated_database_says_to_run_migrate(pool: PgPool) {
    let sluice = Sluice::new(&pool);
    let verbs: [&[&str]; 12] = [
        &["jobs", "list"],
        &["jobs", "show", "1"],
        &["jobs", "cancel", "1"],
        &["jobs", "retry", "--all-dead"],
        &["enqueue", "report"],
        &["stats"],
        &["stats", "--all-tenants"],
        &["tenants", "list"],
        &["tenants", "create", "acme"],
        &["component", "list"],
        &["types", "list"],
        &["schedules", "list"],
    ];
    for args in verbs {
        let out = sluice.run(args);
        let stderr = stderr_of(&out);
        assert_eq!(out.status.code(), Some(1), "sluice {args:?}: {stderr}");
        assert_eq!(
            stderr.matches("run `sluice migrate`").count(),
            1,
            "sluice {args:?}: {stderr}"
        );
        assert!(!stderr.contains("relation"), "sluice {args:?}: {stderr}");
    }
}

/// A server that refuses connections is named, with the reason, instead of a pool
/// timeout.
#[test]
fn a_refused_connection_names_the_address_and_the_reason() {
    // Port 1 on loopback: nothing listens there, so the kernel refuses at once.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["jobs", "list"])
        .env("DATABASE_URL", "postgres://postgres@127.0.0.1:1/sluice")
        .env("SLUICE_LOG", "warn")
        .output()
        .unwrap();
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("127.0.0.1:1"), "{stderr}");
    assert!(stderr.to_lowercase().contains("refused"), "{stderr}");
    assert!(!stderr.contains("pool timed out"), "{stderr}");
}

/// `--run-at` outside 1970..=9999 and `--delay` over 100 years are refused by name.
#[sqlx::test(migrations = false)]
async fn instants_and_delays_out_of_range_are_refused_by_name(pool: PgPool) {
    let sluice = Sluice::new(&pool);
    sluice.ok(&["migrate"]);
    let echo = sample("echo");
    sluice.ok(&["component", "push", echo.to_str().unwrap()]);
    sluice.ok(&["types", "set", "echo", "--component", "echo"]);
    for (args, expected) in [
        (
            &["enqueue", "echo", "--run-at", "1969-12-31T23:59:59Z"][..],
            "invalid run_at",
        ),
        (
            &["enqueue", "echo", "--run-at", "+10000-01-01T00:00:00Z"][..],
            "run",
        ),
        (
            &["enqueue", "echo", "--delay", "101years"][..],
            "invalid delay",
        ),
    ] {
        let out = sluice.run(args);
        let stderr = stderr_of(&out);
        assert_ne!(out.status.code(), Some(0), "sluice {args:?}: {stderr}");
        assert!(stderr.contains(expected), "sluice {args:?}: {stderr}");
    }
    let listed = sluice.json(&["jobs", "list"]);
    assert_eq!(listed.as_array().map(Vec::len), Some(0), "{listed}");
    sluice.ok(&["enqueue", "echo", "--run-at", "9999-12-31T23:59:59Z"]);
    sluice.ok(&["jobs", "list"]);
    sluice.ok(&["stats", "--all-tenants"]);
}

/// A worker asked for more slots than a sandbox can hold (`--concurrency` plus
/// `--spare-slots`) is refused before it claims anything, naming both flags.
#[sqlx::test(migrations = false)]
async fn a_worker_with_too_many_slots_is_refused_naming_the_flags(pool: PgPool) {
    let sluice = Sluice::new(&pool);
    sluice.ok(&["migrate"]);
    let too_many = (u64::from(u32::MAX)).to_string();
    let out = sluice.run(&[
        "worker",
        "--drain",
        "--concurrency",
        "1",
        "--spare-slots",
        &too_many,
    ]);
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("--concurrency plus --spare-slots is too large"),
        "{stderr}"
    );
    assert!(!stderr.contains("drained"), "nothing may run: {stderr}");
}

/// `types set --timeout 0` registers "no timeout" (listed as `none`); a guest that
/// spins forever is then stopped by fuel, not by a clock.
#[sqlx::test(migrations = false)]
async fn a_zero_timeout_means_none_and_fuel_still_stops_a_spinning_guest(pool: PgPool) {
    let sluice = Sluice::new(&pool);
    sluice.ok(&["migrate"]);
    let spin = sample("spin-forever");
    sluice.ok(&[
        "component",
        "push",
        spin.to_str().unwrap(),
        "--name",
        "spin",
    ]);
    sluice.ok(&[
        "types",
        "set",
        "spin",
        "--component",
        "spin",
        "--timeout",
        "0",
        "--fuel",
        "20000000",
        "--max-attempts",
        "1",
    ]);
    let table = sluice.ok(&["types", "list"]);
    let row = table
        .lines()
        .find(|l| l.starts_with("spin"))
        .unwrap_or_default();
    assert!(row.contains("none"), "{table}");
    let types = sluice.json(&["types", "list"]);
    assert_eq!(types[0]["timeout_ms"], 0, "{types}");

    let job = sluice.json(&["enqueue", "spin"]);
    let summary = sluice.json(&["worker", "--drain"]);
    assert_eq!(summary["dead"], 1, "{summary}");
    let shown = sluice.json(&["jobs", "show", &job["id"].to_string()]);
    let error = shown["last_error"].as_str().unwrap();
    assert!(error.starts_with("fuel exhausted"), "{error}");
}
