//! Shared helpers for the end-to-end tests: where the sample components are, how to run
//! the real `sluice` binary against a test's own database, and how to wait for a
//! condition without sleeping for fixed seconds. The tenant + component + job type
//! fixture is in `fixture`, the job factory in `jobs`, the in-process HTTP API in `http`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use sqlx::PgPool;

pub mod cluster;
pub mod fixture;
pub mod http;
pub mod jobs;
pub mod secrets;
pub mod serve_process;
pub mod worker_process;

pub use fixture::Fixture;

/// Held by tests that measure timing (which job ran first, how many overtook another)
/// and by tests that load both cores for a long while (schemathesis, a failover cluster,
/// guest toolchains, the chaos run, a 2,000-job drain through PgBouncer): no timing test
/// shares the machine with a heavy one, while every other test still runs beside either.
/// Take it first thing in the test and keep the guard to its end.
pub async fn quiet_machine() -> tokio::sync::MutexGuard<'static, ()> {
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    LOCK.lock().await
}

/// The repository root (this file is `tests/e2e/support/mod.rs`).
/// A `reqwest` client for the tests (plain HTTP to 127.0.0.1). In this build reqwest's TLS
/// is rustls without a default crypto provider (the typed Rust client's
/// `rustls-no-provider`, unified into every workspace member's reqwest), and reqwest wants
/// one installed before it builds any client: ring, once per process.
pub fn reqwest_client() -> reqwest::Client {
    install_tls_provider();
    reqwest::Client::new()
}

/// Installs rustls' ring provider as the process default (see [`reqwest_client`]).
pub fn install_tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// `reqwest::get` after [`install_tls_provider`].
pub async fn http_get(url: impl reqwest::IntoUrl) -> reqwest::Result<reqwest::Response> {
    reqwest_client().get(url).send().await
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("host/ has a parent")
        .to_path_buf()
}

/// A sample component built by `scripts/build-samples`, by task name (`spin-forever`).
pub fn sample(name: &str) -> PathBuf {
    let path = repo_root()
        .join("sample-tasks/target/wasm32-wasip2/release")
        .join(format!("{}.wasm", name.replace('-', "_")));
    assert!(
        path.exists(),
        "sample component {} is missing: run scripts/build-samples (scripts/test does)",
        path.display()
    );
    path
}

/// A guest-language sample component built by `scripts/build-guests`
/// (`sample-tasks/<lang>/build/<name>.wasm`).
pub fn guest(lang: &str, name: &str) -> PathBuf {
    let path = repo_root()
        .join("sample-tasks")
        .join(lang)
        .join("build")
        .join(format!("{name}.wasm"));
    assert!(
        path.exists(),
        "guest component {} is missing: run scripts/build-guests (scripts/test does)",
        path.display()
    );
    path
}

/// The connection string of the database `#[sqlx::test]` made for this test.
pub fn database_url(pool: &PgPool) -> String {
    let base = std::env::var("DATABASE_URL").expect("DATABASE_URL is set by scripts/test");
    let db = pool
        .connect_options()
        .get_database()
        .expect("test database has a name")
        .to_owned();
    let (prefix, rest) = base
        .rsplit_once('/')
        .expect("DATABASE_URL has a database part");
    let query = rest
        .split_once('?')
        .map(|(_, q)| format!("?{q}"))
        .unwrap_or_default();
    format!("{prefix}/{db}{query}")
}

/// The real binary, pointed at the test's database, with a private component cache.
pub struct Sluice {
    pub url: String,
    pub cache: PathBuf,
}

impl Sluice {
    pub fn new(pool: &PgPool) -> Self {
        let url = database_url(pool);
        let db = url.rsplit('/').next().unwrap_or("db").to_owned();
        let cache = std::env::temp_dir().join(format!("sluice-test-cache-{db}"));
        Self { url, cache }
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_sluice"));
        command
            .args(args)
            .env("DATABASE_URL", &self.url)
            .env("SLUICE_CACHE_DIR", &self.cache)
            .env_remove("SLUICE_TENANT")
            .env("SLUICE_LOG", "warn");
        command
    }

    /// Run and require success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(
            output.status.success(),
            "sluice {args:?} failed ({}):\nstdout: {}\nstderr: {}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).expect("utf-8 stdout")
    }

    /// Run and return the whole output, whatever the exit code.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run the sluice binary")
    }

    /// Run with `--json` and parse stdout's last line.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.ok(&all);
        let last = out.lines().last().unwrap_or_default();
        serde_json::from_str(last)
            .unwrap_or_else(|e| panic!("sluice {args:?} printed no JSON ({e}): {out}"))
    }
}

/// `sluice enqueue JOB_TYPE --payload PAYLOAD` (tenant `default`); the new job's id.
pub fn enqueue(sluice: &Sluice, job_type: &str, payload: serde_json::Value) -> String {
    let job = sluice.json(&["enqueue", job_type, "--payload", &payload.to_string()]);
    job["id"].as_i64().expect("the new job's id").to_string()
}

/// `sluice jobs show ID`: the job object (as `GET /v1/jobs/{id}` shows it).
pub fn show(sluice: &Sluice, id: &str) -> serde_json::Value {
    sluice.json(&["jobs", "show", id])
}

/// A job's output: JSON when it is JSON (as `jobs show` prints it); a job without one
/// panics.
pub fn output(job: &serde_json::Value) -> serde_json::Value {
    let output = job["output"].clone();
    assert!(!output.is_null(), "no output: {job}");
    output
}

/// Poll `check` every 10 ms until it returns `Some`, or panic after `limit`.
pub async fn wait_for<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A blocking HTTP server on 127.0.0.1 answering every connection `200 hello`; returns
/// its origin (`http://127.0.0.1:PORT`). It lives as long as the test process.
pub fn hello_server() -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut head = [0u8; 4096];
            let _ = stream.read(&mut head);
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello",
            );
        }
    });
    origin
}
