//! The typed clients of `clients/` (issue #41): each is generated from the OpenAPI
//! document the server serves, and each enqueues, awaits, lists, cancels and retries
//! jobs against a real `sluice serve` with a real worker.
//!
//! - `clients/openapi.json` is the live document (this test compares them; a route or
//!   field added to the server changes it: `SLUICE_BLESS=1 cargo test --test e2e
//!   clients::` rewrites it), and each client's `generate.py --check` says its generated
//!   layer is what that document gives. So a server change that a client does not have
//!   fails here until the client is regenerated.
//! - The live suites: Python's (`unittest`, the installed package) and TypeScript's
//!   (`node --test`, the compiled package), as processes with `SLUICE_URL` and
//!   `SLUICE_TOKEN`; Rust's scenarios (`clients/rust/tests/scenarios.rs`) in process. One
//!   server and one worker serve all three. `scripts/test` installs the Python and
//!   TypeScript packages' dependencies first (`ensure_clients`, scripts/lib/toolchains.sh).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use sqlx::PgPool;

use crate::support::http::{Api, json};
use crate::support::serve_process::ServeProcess;
use crate::support::worker_process::WorkerProcess;
use crate::support::{Sluice, repo_root};

#[path = "../../clients/rust/tests/scenarios.rs"]
mod rust_scenarios;

/// The snapshot of the live document the clients are generated from.
const SNAPSHOT: &str = "clients/openapi.json";
/// The clients, by folder under `clients/`.
const CLIENTS: [&str; 3] = ["python", "typescript", "rust"];

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn the_clients_are_generated_from_the_live_document(pool: PgPool) {
    let api = Api::start(&pool).await;
    let (status, document) = json(api.get("/v1/openapi.json", "").await).await;
    assert_eq!(status, 200);
    let live = serde_json::to_string_pretty(&document).unwrap() + "\n";
    let path = repo_root().join(SNAPSHOT);
    if std::env::var_os("SLUICE_BLESS").is_some() {
        std::fs::write(&path, &live).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == live,
        "{SNAPSHOT} is not the document the server serves: the API changed. Rewrite it \
         (SLUICE_BLESS=1 cargo test --test e2e clients::), then regenerate the clients \
         (python3 clients/<lang>/generate.py for {CLIENTS:?})"
    );
    for client in CLIENTS {
        let script = repo_root().join("clients").join(client).join("generate.py");
        let out = Command::new("python3")
            .arg(&script)
            .arg("--check")
            .current_dir(repo_root())
            .output()
            .expect("run python3");
        assert!(
            out.status.success(),
            "the {client} client is not generated from {SNAPSHOT}: run python3 {}\n{}{}",
            script.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Where `ensure_clients` installs the Python package (`pip install --target`).
fn python_site() -> PathBuf {
    installed(".toolchains/python-client")
}

/// The TypeScript package, compiled by `ensure_clients` (`npm ci && npm run build`).
fn typescript_package() -> PathBuf {
    installed("clients/typescript/node_modules")
        .parent()
        .unwrap()
        .to_path_buf()
}

fn installed(relative: &str) -> PathBuf {
    let path = repo_root().join(relative);
    assert!(
        path.exists(),
        "{} is missing: run scripts/test, which installs the clients' dependencies, or just \
         that step: bash -c 'source scripts/lib/toolchains.sh && ensure_clients'",
        path.display()
    );
    path
}

/// Runs one client's live suite; its failure, if any, with the whole output. A suite
/// that skipped tests (`skipped` says so in its output) failed: here the server is up.
fn run_suite(
    name: &str,
    mut command: Command,
    base: &str,
    token: &str,
    skipped: fn(&str) -> bool,
) -> Option<String> {
    let started = Instant::now();
    let out = command
        .env("SLUICE_URL", base)
        .env("SLUICE_TOKEN", token)
        .output()
        .unwrap_or_else(|e| panic!("run the {name} client's tests: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{name} client: {:?} in {:?}", out.status, started.elapsed());
    if !out.status.success() {
        return Some(format!("the {name} client's live tests failed:\n{text}"));
    }
    skipped(&text).then(|| format!("the {name} client's tests skipped some:\n{text}"))
}

fn in_dir(program: &str, dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(program);
    command.args(args).current_dir(dir);
    command
}

#[sqlx::test(migrations = false)]
async fn every_client_enqueues_and_awaits_against_a_live_server(pool: PgPool) {
    let sluice = Sluice::with_type(&pool, "echo", "echo", &[]);
    sluice.define("fatal", "fatal", &[]);
    sluice.define(
        "flaky",
        "flaky",
        &["--max-attempts", "4", "--backoff-base", "200ms"],
    );
    let token = sluice.json(&["tenants", "token", "create", "default"])["token"]
        .as_str()
        .expect("a token")
        .to_owned();
    let db = sluice.url.rsplit('/').next().unwrap_or("db").to_owned();
    let server = ServeProcess::start(&sluice, &format!("clients-{db}"));
    let _worker = WorkerProcess::spawn(&sluice, "clients", &["--concurrency", "4"]);

    let mut failures = Vec::new();
    let mut python = in_dir(
        "python3",
        &repo_root().join("clients/python"),
        &["-m", "unittest", "discover", "-s", "tests", "-v"],
    );
    python.env("PYTHONPATH", python_site());
    failures.extend(run_suite("Python", python, &server.base, &token, |out| {
        out.contains("skipped")
    }));
    let typescript = in_dir("npm", &typescript_package(), &["test", "--silent"]);
    failures.extend(run_suite(
        "TypeScript",
        typescript,
        &server.base,
        &token,
        |out| !out.contains("# skipped 0"),
    ));
    let started = Instant::now();
    rust_scenarios::run_all(&server.base, &token).await;
    eprintln!("Rust client: passed in {:?}", started.elapsed());
    assert!(
        failures.is_empty(),
        "{}\nserver log:\n{}",
        failures.join("\n"),
        server.log_text()
    );
}
