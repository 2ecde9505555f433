//! Task handlers in every supported guest language, through the real `sluice` binary and
//! worker against a real Postgres: one test body, run for each language's sample components
//! (built from source by `scripts/build-guests` into `sample-tasks/<lang>/build/`).
//!
//! For every language: `echo` completes with its payload; `json-flaky` completes on the
//! attempt its payload names, after two retries; a malformed payload makes it `dead` with the
//! guest's own message. For the interpreted languages (Python, JavaScript), `spin-forever`
//! under a 300 ms timeout fails with `timeout (300ms)` well within 600 ms: the epoch deadline
//! interrupts an interpreter too. For the languages with an HTTP helper (Python,
//! JavaScript, C, Go), `http-get` granted a 127.0.0.1 origin gets its answer through `sluice worker`, and a
//! request elsewhere is refused. For Python, JavaScript, C and Go, `fan-out` enqueues follow-up
//! jobs that run after it, and an unknown job type ends it `dead` with none. Components are compiled when they are pushed (into a disk
//! cache shared by these tests, keyed by sha256), never inside a job's timeout.

use std::time::Instant;

use crate::support::{Sluice, repo_root};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgPool;

/// One guest language and what its samples cover.
struct Lang {
    /// Folder under `sample-tasks/` (and `build/` inside it).
    dir: &'static str,
    /// Whether it ships `spin-forever` (interpreters: proves the deadline interrupts them).
    spins: bool,
    /// Whether it ships `http-get` (contract 0.2: outbound HTTP through the egress policy).
    http: bool,
    /// Whether it ships `fan-out` (contract 0.2: follow-up jobs).
    fans_out: bool,
}

const PYTHON: Lang = Lang {
    dir: "python",
    spins: true,
    http: true,
    fans_out: true,
};
const JS: Lang = Lang {
    dir: "js",
    spins: true,
    http: true,
    fans_out: true,
};
const C: Lang = Lang {
    dir: "c",
    spins: false,
    http: true,
    fans_out: true,
};
const GO: Lang = Lang {
    dir: "go",
    spins: false,
    http: true,
    fans_out: true,
};

#[sqlx::test(migrations = false)]
async fn python_tasks_keep_the_contract(pool: PgPool) {
    contract(&pool, &PYTHON).await;
}

#[sqlx::test(migrations = false)]
async fn javascript_tasks_keep_the_contract(pool: PgPool) {
    contract(&pool, &JS).await;
}

#[sqlx::test(migrations = false)]
async fn c_tasks_keep_the_contract(pool: PgPool) {
    contract(&pool, &C).await;
}

#[sqlx::test(migrations = false)]
async fn go_tasks_keep_the_contract(pool: PgPool) {
    contract(&pool, &GO).await;
}

fn enqueue(sluice: &Sluice, job_type: &str, payload: &str) -> String {
    let job = sluice.json(&["enqueue", job_type, "--payload", payload]);
    job["id"]
        .as_i64()
        .expect("enqueue prints the job id")
        .to_string()
}

fn timestamp(value: &Value) -> DateTime<Utc> {
    value
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a timestamp: {value}"))
}

async fn contract(pool: &PgPool, lang: &Lang) {
    let sluice = Sluice::for_guests(pool);
    let dir = lang.dir;
    sluice.define_guest(dir, "echo", "echo", &["--max-attempts", "1"]);
    let backoff = [
        "--max-attempts",
        "3",
        "--backoff-base",
        "10ms",
        "--backoff-cap",
        "50ms",
    ];
    sluice.define_guest(dir, "json-flaky", "json-flaky", &backoff);
    if lang.spins {
        // Fuel far beyond what 300 ms can burn: the deadline must be what stops it.
        let limits = [
            "--max-attempts",
            "1",
            "--timeout",
            "300ms",
            "--fuel",
            "1000000000000",
        ];
        sluice.define_guest(dir, "spin-forever", "spin-forever", &limits);
    }

    let payload = format!(r#"{{"hello":"{dir}","n":[1,2,3],"text":"é ✓"}}"#);
    let echo = enqueue(&sluice, "echo", &payload);
    let flaky = enqueue(&sluice, "json-flaky", r#"{"succeed_on":3}"#);
    let malformed = enqueue(&sluice, "json-flaky", "{not json");

    let started = Instant::now();
    let summary = sluice.json(&[
        "worker",
        "--drain",
        "--concurrency",
        "4",
        "--poll-interval",
        "100ms",
    ]);
    eprintln!(
        "{dir}: worker drained in {:?}: {summary}",
        started.elapsed()
    );
    let show = |id: &str| sluice.json(&["jobs", "show", id]);

    // echo: the output is the payload, byte for byte.
    let shown = show(&echo);
    assert_eq!(shown["state"], "completed", "{dir} echo: {shown}");
    let stored: Vec<u8> = sqlx::query_scalar("SELECT output FROM sluice.jobs WHERE id = $1")
        .bind(echo.parse::<i64>().unwrap())
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(stored, payload.as_bytes(), "{dir} echo");
    let sent: Value = serde_json::from_str(&payload).unwrap();
    assert_eq!(
        shown["output"], sent,
        "{dir} echo: the output shown as JSON"
    );

    // json-flaky: two retries, then a JSON output on the third attempt.
    let shown = show(&flaky);
    assert_eq!(shown["state"], "completed", "{dir} json-flaky: {shown}");
    assert_eq!(shown["attempt"], 3, "{dir} json-flaky: {shown}");
    let attempts = sluice.json(&["jobs", "attempts", &flaky]);
    let outcomes: Vec<&str> = attempts
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["outcome"].as_str().unwrap_or("none"))
        .collect();
    assert_eq!(
        outcomes,
        ["retry", "retry", "completed"],
        "{dir}: {attempts}"
    );
    let first_error = attempts[0]["error"].as_str().unwrap_or_default();
    assert_eq!(
        first_error, "guest retry: attempt 1 of 3 failed on purpose",
        "{dir}: {attempts}"
    );
    let output: Value = shown["output"].clone();
    assert_eq!(output, serde_json::json!({ "succeeded_on": 3 }), "{dir}");

    // A malformed payload: dead at once, with the guest's message.
    let shown = show(&malformed);
    assert_eq!(shown["state"], "dead", "{dir} malformed: {shown}");
    assert_eq!(shown["attempt"], 1, "{dir} malformed: {shown}");
    let error = shown["last_error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("guest fatal: payload is not valid JSON"),
        "{dir} malformed: {error}"
    );

    if lang.spins {
        spin_is_interrupted(&sluice, dir);
    }
    if lang.http {
        http_get_reaches_a_granted_server(&sluice, dir);
    }
    if lang.fans_out {
        fan_out_enqueues_follow_up_jobs(&sluice, dir);
    }
}

/// fan-out enqueues two echo jobs that run after it (children of the completed job), and
/// one asking for an unknown type ends `dead` at once, naming the refusal, with none.
fn fan_out_enqueues_follow_up_jobs(sluice: &Sluice, dir: &str) {
    sluice.define_guest(dir, "fan-out", "fan-out", &["--max-attempts", "2"]);
    let fanned = enqueue(sluice, "fan-out", r#"{"type":"echo","count":2}"#);
    let unknown = enqueue(sluice, "fan-out", r#"{"type":"no-such-type","count":1}"#);
    let summary = sluice.json(&["worker", "--drain"]);
    assert_eq!(summary["completed"], 3, "{dir} fan-out: {summary}");
    let shown = sluice.json(&["jobs", "show", &fanned]);
    assert_eq!(shown["state"], "completed", "{dir} fan-out: {shown}");
    assert_eq!(shown["children_count"], 2, "{dir} fan-out: {shown}");
    for (n, child) in shown["children"].as_array().unwrap().iter().enumerate() {
        let child = sluice.json(&["jobs", "show", &child.to_string()]);
        assert_eq!(child["state"], "completed", "{dir} child: {child}");
        let payload: Value = child["output"].clone();
        assert_eq!(payload, serde_json::json!({"n": n, "attempt": 1}), "{dir}");
    }
    let shown = sluice.json(&["jobs", "show", &unknown]);
    assert_eq!(shown["state"], "dead", "{dir} unknown type: {shown}");
    assert_eq!(shown["attempt"], 1, "{dir} unknown type: {shown}");
    assert_eq!(shown["children_count"], 0, "{dir} unknown type: {shown}");
    let error = shown["last_error"].as_str().unwrap_or_default();
    assert!(
        error.contains("no-such-type"),
        "{dir} unknown type: {error}"
    );
}

/// http-get granted one 127.0.0.1 origin through `sluice worker`: a request there completes
/// with the answer; one to another address is refused and ends the job `dead`.
fn http_get_reaches_a_granted_server(sluice: &Sluice, dir: &str) {
    let origin = crate::support::hello_server();
    let open = ["--egress-allow-network", "127.0.0.1/32"];
    sluice.define_guest(
        dir,
        "http-get",
        "http-get",
        &[
            "--allow-http",
            &origin,
            open[0],
            open[1],
            "--max-attempts",
            "1",
        ],
    );
    let url = |url: &str| format!(r#"{{"url":"{url}"}}"#);
    let granted = enqueue(sluice, "http-get", &url(&format!("{origin}/ok")));
    let refused = enqueue(sluice, "http-get", &url("http://169.254.169.254/"));
    let summary = sluice.json(&["worker", "--drain", open[0], open[1]]);
    assert_eq!(summary["completed"], 1, "{dir} http-get: {summary}");
    let shown = sluice.json(&["jobs", "show", &granted]);
    let output: Value = shown["output"].clone();
    assert_eq!(output["status"], 200, "{dir}: {output}");
    assert_eq!(output["body_head"], "hello", "{dir}: {output}");
    let shown = sluice.json(&["jobs", "show", &refused]);
    assert_eq!(shown["state"], "dead", "{dir} refused: {shown}");
    let error = shown["last_error"].as_str().unwrap_or_default();
    // An IP literal on the deny list is refused before the allow list is even read.
    assert!(
        error.contains("destination-IP-prohibited"),
        "{dir} refused: {error}"
    );
}

/// spin-forever under a 300 ms timeout ends `timeout (300ms)`, its attempt lasting less
/// than 600 ms from claim to outcome. Two jobs, one at a time: the first attempt also
/// includes this worker loading the component (precompiled at push) from the disk cache,
/// the second measures the interruption alone.
fn spin_is_interrupted(sluice: &Sluice, dir: &str) {
    let first = enqueue(sluice, "spin-forever", "{}");
    let second = enqueue(sluice, "spin-forever", "{}");
    let summary = sluice.json(&["worker", "--drain", "--concurrency", "1"]);
    assert_eq!(summary["dead"], 2, "{dir} spin-forever: {summary}");
    let mut lasted = Vec::new();
    for id in [&first, &second] {
        let shown = sluice.json(&["jobs", "show", id]);
        assert_eq!(shown["state"], "dead", "{dir} spin-forever: {shown}");
        assert_eq!(shown["last_error"], "timeout (300ms)", "{dir}: {shown}");
        let attempts = sluice.json(&["jobs", "attempts", id]);
        let attempt = &attempts[0];
        let took = timestamp(&attempt["finished_at"]) - timestamp(&attempt["started_at"]);
        lasted.push(took.num_milliseconds());
    }
    eprintln!(
        "{dir}: spin-forever attempts lasted {} ms (first, with the component load) and {} ms",
        lasted[0], lasted[1]
    );
    assert!(
        lasted[1] < 600,
        "{dir}: the spinning attempt lasted {} ms (limit 300 ms, allowed 600 ms)",
        lasted[1]
    );
    assert!(
        lasted[0] < 5_000,
        "{dir}: the first spinning attempt lasted {} ms: was the component compiled inside it?",
        lasted[0]
    );
}

/// `sluice task new` scaffolds a project per language; its build script builds it with the
/// toolchains `scripts/build-guests` installed, and the result pushes and runs unchanged.
#[sqlx::test(migrations = false)]
async fn scaffolded_projects_build_push_and_run_in_every_language(pool: PgPool) {
    let _quiet = crate::support::quiet_machine().await;
    let sluice = Sluice::for_guests(&pool);
    let root = repo_root();
    // Where scripts/build-guests installed them (SLUICE_TOOLCHAINS_DIR, as for it).
    let toolchains_dir = std::env::var_os("SLUICE_TOOLCHAINS_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join(".toolchains"));
    let toolchains = toolchains_dir.join("bin");
    assert!(
        toolchains.exists(),
        "{} is missing: run scripts/build-guests (scripts/test does)",
        toolchains.display()
    );
    // The build scripts run their cases with `sluice test` when `sluice` is on the PATH.
    let sluice_dir = std::path::Path::new(env!("CARGO_BIN_EXE_sluice"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!(
        "{}:{}:{}",
        toolchains.display(),
        sluice_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let work = std::env::temp_dir().join(format!("sluice-scaffold-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();

    let mut ids = Vec::new();
    // Go's scaffold twice: as written (contract 0.1), and built for contract 0.2 (the SDK's
    // generated bindings and the checkout's wit/v0.2).
    let builds = [
        ("rust", None),
        ("python", None),
        ("js", None),
        ("c", None),
        ("go", None),
        ("go", Some("0.2")),
    ];
    for (lang, contract) in builds {
        let name = match contract {
            None => format!("hello-{lang}"),
            Some(_) => format!("hello-{lang}-v02"),
        };
        sluice.ok(&[
            "task",
            "new",
            &name,
            "--lang",
            lang,
            "--dir",
            work.to_str().unwrap(),
        ]);
        let project = work.join(&name);
        let started = Instant::now();
        let mut build = std::process::Command::new("sh");
        if let Some(contract) = contract {
            build.env("SLUICE_CONTRACT", contract);
        }
        let built = build
            .arg(project.join("build.sh"))
            .env("PATH", &path)
            // C: reuse the wasi-libc scripts/build-guests already compiled.
            .env("ZIG_GLOBAL_CACHE_DIR", toolchains_dir.join("zig-cache"))
            // Rust: one target dir across runs, so only the first run compiles the SDK.
            .env(
                "CARGO_TARGET_DIR",
                std::env::temp_dir().join("sluice-scaffold-rust-target"),
            )
            .output()
            .expect("run build.sh");
        assert!(
            built.status.success(),
            "{lang}: build.sh failed:\n{}\n{}",
            String::from_utf8_lossy(&built.stdout),
            String::from_utf8_lossy(&built.stderr)
        );
        let stdout = String::from_utf8_lossy(&built.stdout);
        assert!(
            stdout.contains("2 passed, 0 failed"),
            "{lang}: build.sh ran the template's cases.json:\n{stdout}"
        );
        if let Some(contract) = contract {
            assert!(
                stdout.contains(&format!("(contract {contract})")),
                "{lang}: {stdout}"
            );
        }
        eprintln!(
            "{lang}: scaffold built and its cases passed in {:?}",
            started.elapsed()
        );
        let wasm = project.join("build").join(format!("{name}.wasm"));
        sluice.ok(&["component", "push", wasm.to_str().unwrap()]);
        sluice.ok(&["types", "set", &name, "--component", &name]);
        let id = enqueue(&sluice, &name, r#"{"n":1}"#);
        ids.push((lang, name, id));
    }
    // The same name twice is refused, and nothing is overwritten.
    let again = sluice.run(&[
        "task",
        "new",
        "hello-c",
        "--lang",
        "c",
        "--dir",
        work.to_str().unwrap(),
    ]);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));

    let summary = sluice.json(&["worker", "--drain", "--concurrency", "4"]);
    assert_eq!(summary["completed"], builds.len(), "{summary}");
    for (lang, name, id) in ids {
        let shown = sluice.json(&["jobs", "show", &id]);
        let output: Value = shown["output"].clone();
        assert_eq!(
            output,
            serde_json::json!({ "task": name, "received": { "n": 1 } }),
            "{lang}"
        );
    }
    let _ = std::fs::remove_dir_all(&work);
}
