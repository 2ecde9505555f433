//! Shared helpers for the sandbox's integration tests: sample components (built from
//! `sample-tasks/` by `scripts/build-samples`), a small sandbox, jobs and limits.

pub mod fixtures;
pub mod http_server;

use std::path::PathBuf;
use std::time::Duration;

use sluice_sandbox::{
    CancellationToken, JobInput, Limits, Outcome, RunReport, Sandbox, SandboxConfig, TaskComponent,
};

/// The repository root (this crate lives in `host/sandbox`).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Path of a sample component, e.g. `spin-forever` → `.../release/spin_forever.wasm`.
pub fn sample_path(name: &str) -> PathBuf {
    repo_root()
        .join("sample-tasks/target/wasm32-wasip2/release")
        .join(format!("{}.wasm", name.replace('-', "_")))
}

/// The bytes of a sample component; fails the test with the fix when it is missing.
pub fn sample(name: &str) -> Vec<u8> {
    let path = sample_path(name);
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "sample component `{name}` is missing at {} ({e}): run scripts/build-samples",
            path.display()
        )
    })
}

pub use sluice_sandbox::sha256_hex;

/// A shared disk cache for tests that are not about the cache, so each sample is compiled
/// once per `cargo test` run rather than once per test.
pub fn shared_cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sluice-sandbox-test-cache")
}

pub fn config() -> SandboxConfig {
    SandboxConfig {
        max_concurrency: 4,
        guest_threads: 2,
        cache_dir: Some(shared_cache_dir()),
        ..SandboxConfig::default()
    }
}

pub fn sandbox() -> Sandbox {
    Sandbox::new(config()).expect("build the sandbox")
}

pub fn prepare(sandbox: &Sandbox, name: &str) -> TaskComponent {
    let bytes = sample(name);
    sandbox
        .prepare(&sha256_hex(&bytes), &bytes)
        .unwrap_or_else(|e| panic!("prepare `{name}`: {e}"))
}

pub fn job(payload: &str) -> JobInput {
    JobInput {
        id: 42,
        job_type: "test".into(),
        tenant: "acme".into(),
        attempt: 1,
        max_attempts: 3,
        payload: payload.as_bytes().to_vec(),
        trace: None,
    }
}

/// Test limits: defaults with a timeout short enough that a broken test fails quickly.
pub fn limits() -> Limits {
    Limits {
        timeout: Some(Duration::from_secs(20)),
        ..Limits::default()
    }
}

pub async fn run(sandbox: &Sandbox, name: &str, payload: &str, limits: &Limits) -> RunReport {
    let component = prepare(sandbox, name);
    sandbox
        .run(&component, job(payload), limits, CancellationToken::new())
        .await
}

pub fn output(report: &RunReport) -> &[u8] {
    match &report.outcome {
        Outcome::Completed { output } => output,
        Outcome::Failed(f) => panic!(
            "expected completion, got `{}`; logs:\n{}",
            f.reason(),
            String::from_utf8_lossy(&report.logs)
        ),
        Outcome::Suspended(why) => panic!("expected completion, the run suspended: {why}"),
    }
}

pub fn reason(report: &RunReport) -> String {
    match &report.outcome {
        Outcome::Completed { output } => panic!(
            "expected a failure, got completion with {} bytes of output",
            output.len()
        ),
        Outcome::Failed(f) => f.reason(),
        Outcome::Suspended(why) => panic!("expected a failure, the run suspended: {why}"),
    }
}

/// After a hostile guest, the same sandbox must still run `echo` normally.
pub async fn assert_still_works(sandbox: &Sandbox) {
    let report = run(sandbox, "echo", "still alive", &limits()).await;
    assert_eq!(output(&report), b"still alive");
}

/// Path of a non-Rust guest component built by `scripts/build-guests`, e.g.
/// `guest_path("python", "http-get")` → `.../sample-tasks/python/build/http-get.wasm`.
pub fn guest_path(lang: &str, name: &str) -> PathBuf {
    repo_root()
        .join("sample-tasks")
        .join(lang)
        .join("build")
        .join(format!("{name}.wasm"))
}

/// The bytes of a non-Rust guest component; fails the test with the fix when it is missing.
pub fn guest(lang: &str, name: &str) -> Vec<u8> {
    let path = guest_path(lang, name);
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "guest component `{lang}/{name}` is missing at {} ({e}): run scripts/build-guests {lang}",
            path.display()
        )
    })
}

pub fn prepare_guest(sandbox: &Sandbox, lang: &str, name: &str) -> TaskComponent {
    let bytes = guest(lang, name);
    sandbox
        .prepare(&sha256_hex(&bytes), &bytes)
        .unwrap_or_else(|e| panic!("prepare `{lang}/{name}`: {e}"))
}
