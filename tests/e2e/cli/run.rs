//! `sluice run` (issue #41): one attempt of a real sample component in the real sandbox,
//! with `DATABASE_URL` removed from the child's environment, and the exit code of each
//! outcome as docs/cli.md documents it: `echo` completes with its payload (0), `flaky`
//! asks to be retried (3), `fatal` is fatal (4), `spin-forever` runs out of fuel or time
//! (5), a missing component is bad input (2); `http-get` reaches a server on 127.0.0.1
//! through `--allow-http` inside `--egress-allow-network`, and `bearer-call` sends the
//! `--secret` it was given as its bearer token (masked in the logs printed); `fan-out`'s
//! follow-up jobs are printed.

use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::egress_support::{Reply, TestServer};
use crate::support::sample;

/// `sluice run ARGS --json` with no database in sight; the output and the parsed JSON.
fn run(args: &[&str]) -> (Output, Value) {
    let out = command(args).arg("--json").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("sluice run {args:?} printed no JSON ({e}): {out:?}"));
    (out, json)
}

fn command(args: &[&str]) -> Command {
    let cache = std::env::temp_dir().join(format!("sluice-run-cache-{}", std::process::id()));
    let mut command = Command::new(env!("CARGO_BIN_EXE_sluice"));
    command
        .arg("run")
        .args(args)
        .env_remove("DATABASE_URL")
        .env_remove("SLUICE_EGRESS_ALLOW_NETWORK")
        .env("SLUICE_CACHE_DIR", cache)
        .env("SLUICE_LOG", "warn");
    command
}

fn path(name: &str) -> String {
    sample(name).to_str().unwrap().to_owned()
}

/// A recording server on 127.0.0.1 answering `200 {"ok":true}`, on its own runtime.
fn server(runtime: &tokio::runtime::Runtime) -> TestServer {
    let handle = runtime.handle().clone();
    std::thread::spawn(move || handle.block_on(TestServer::start(Reply::ok(r#"{"ok":true}"#))))
        .join()
        .unwrap()
}

#[test]
fn echo_completes_with_its_payload_as_output_and_exits_0() {
    let payload = json!({ "n": 7, "text": "café" });
    let (out, report) = run(&[&path("echo"), "--payload", &payload.to_string()]);
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert_eq!(report["outcome"], "completed", "{report}");
    assert_eq!(report["output"], payload, "{report}");
    assert!(report["fuel_used"].as_u64().unwrap() > 0, "{report}");
    assert_eq!(report["http_requests"], 0, "{report}");

    // Without --json: the outcome and the output as text, then the logs.
    let out = command(&[&path("echo"), "--payload", &payload.to_string()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("outcome") && stdout.contains("completed"),
        "{stdout}"
    );
    assert!(stdout.contains(&payload.to_string()), "{stdout}");
    assert!(stdout.contains("fuel used"), "{stdout}");
}

#[test]
fn follow_ups_are_printed_not_enqueued() {
    let payload = json!({ "type": "send-email", "count": 2, "delay_ms": 500 }).to_string();
    let (out, report) = run(&[&path("fan-out"), "--payload", &payload]);
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert_eq!(report["output"]["enqueued"], 2, "{report}");
    let follow_ups = report["follow_ups"].as_array().unwrap();
    assert_eq!(follow_ups.len(), 2, "{report}");
    assert_eq!(follow_ups[1]["job_type"], "send-email");
    assert_eq!(follow_ups[1]["payload"], json!({ "n": 1, "attempt": 1 }));
    assert_eq!(follow_ups[1]["delay_ms"], 500);
}

#[test]
fn each_failure_class_has_its_exit_code() {
    // `flaky` fails attempt 1 of 2 with a retryable error.
    let (out, report) = run(&[&path("flaky"), "--payload", r#"{"succeed_on": 2}"#]);
    assert_eq!(out.status.code(), Some(3), "{report}");
    assert_eq!(report["outcome"], "retry", "{report}");
    assert!(
        report["logs"]
            .as_str()
            .unwrap()
            .contains("attempt 1 of job"),
        "{report}"
    );
    // ... and completes when told it is attempt 2.
    let (out, report) = run(&[
        &path("flaky"),
        "--payload",
        r#"{"succeed_on": 2}"#,
        "--attempt",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert_eq!(report["output"], "ok on attempt 2", "{report}");

    let (out, report) = run(&[&path("fatal")]);
    assert_eq!(out.status.code(), Some(4), "{report}");
    assert_eq!(report["outcome"], "fatal", "{report}");

    let (out, report) = run(&[&path("spin-forever"), "--fuel", "1000000"]);
    assert_eq!(out.status.code(), Some(5), "{report}");
    assert_eq!(report["outcome"], "limit_exceeded", "{report}");
    assert!(
        report["reason"]
            .as_str()
            .unwrap()
            .contains("fuel exhausted"),
        "{report}"
    );
    let (out, report) = run(&[&path("spin-forever"), "--fuel", "0", "--timeout", "200ms"]);
    assert_eq!(out.status.code(), Some(5), "{report}");
    assert!(
        report["reason"].as_str().unwrap().contains("timeout"),
        "{report}"
    );

    // Input that cannot be used: exit 2 and one line naming it.
    let out = command(&["/nonexistent/task.wasm"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("/nonexistent/task.wasm"), "{stderr}");
    let out = command(&[&path("echo"), "--allow-http", "ftp://x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[test]
fn http_get_reaches_a_loopback_server_it_is_allowed_to_call() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = server(&runtime);
    let origin = format!("http://127.0.0.1:{}", server.port());
    let payload = json!({ "url": format!("{origin}/hello") }).to_string();

    // Not allowed: the request is denied, the task fatal, nothing reaches the server.
    let (out, report) = run(&[
        &path("http-get"),
        "--payload",
        &payload,
        "--egress-allow-network",
        "127.0.0.1/32",
    ]);
    assert_eq!(out.status.code(), Some(4), "{report}");
    assert_eq!(report["http_outcomes"], json!(["denied"]), "{report}");
    assert!(server.requests().is_empty());

    let (out, report) = run(&[
        &path("http-get"),
        "--payload",
        &payload,
        "--allow-http",
        &origin,
        "--egress-allow-network",
        "127.0.0.1/32",
    ]);
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert_eq!(report["output"]["status"], 200, "{report}");
    assert_eq!(report["output"]["body_head"], r#"{"ok":true}"#, "{report}");
    assert_eq!(report["http_requests"], 1, "{report}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(requests[0].method, "GET");
    assert_eq!(requests[0].target, "/hello");

    // Loopback is closed unless the operator opens it: the entry itself is refused.
    let out = command(&[
        &path("http-get"),
        "--payload",
        &payload,
        "--allow-http",
        &origin,
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[test]
fn bearer_call_sends_the_secret_given_on_the_command_line() {
    const VALUE: &str = "sk_test_local_run_value";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = server(&runtime);
    let origin = format!("http://127.0.0.1:{}", server.port());
    let payload = json!({ "secret": "API_TOKEN", "url": format!("{origin}/charge") }).to_string();
    let secret = format!("API_TOKEN={VALUE}");
    let (out, report) = run(&[
        &path("bearer-call"),
        "--payload",
        &payload,
        "--secret",
        &secret,
        "--allow-http",
        &origin,
        "--egress-allow-network",
        "127.0.0.1/32",
    ]);
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert_eq!(report["output"], json!({ "status": 200 }), "{report}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {VALUE}").as_str())
    );
    // The logs printed are the host's, masked as a worker's are.
    let logs = report["logs"].as_str().unwrap();
    assert!(logs.contains("[secret API_TOKEN]"), "{logs}");
    assert!(!logs.contains(VALUE), "{logs}");

    // Without the secret the task is told it is not granted: fatal.
    let (out, report) = run(&[
        &path("bearer-call"),
        "--payload",
        &payload,
        "--allow-http",
        &origin,
        "--egress-allow-network",
        "127.0.0.1/32",
    ]);
    assert_eq!(out.status.code(), Some(4), "{report}");
    assert_eq!(server.requests().len(), 1);
}
