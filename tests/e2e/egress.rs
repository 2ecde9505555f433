//! Outbound HTTP end to end through the real `sluice` binary: a job type granted a
//! destination (`sluice types set --allow-http`) reaches a real server on 127.0.0.1 over
//! HTTP and over HTTPS with a test CA (`--egress-ca-file`), opened by the operator's
//! `--egress-allow-network`; every refused destination reaches nothing and the job
//! follows its task's choice; `post-json` (a realistic task) completes on 2xx, retries
//! 5xx and gives up on 4xx; bad allow lists are refused when set; and a rolling deploy:
//! a host limited to contract 0.1 leaves 0.2 jobs pending without spending an attempt,
//! and a full host then runs 0.1 and 0.2 components side by side.

mod caps;

use std::time::Duration;

use crate::egress_support::{Reply, TestCa, TestServer};
use crate::support::worker_process::WorkerProcess;
use crate::support::{Sluice, enqueue, output, show, wait_for};
use sqlx::PgPool;

/// The operator's opening for the test servers, and nothing else.
const LOOPBACK: &str = "127.0.0.1/32,::1/128";

/// Test servers on their own multi-threaded runtime: the test's own runtime thread blocks
/// while it waits for the `sluice` binary.
struct Servers {
    runtime: Option<tokio::runtime::Runtime>,
}

impl Servers {
    fn new() -> Self {
        Servers {
            runtime: Some(tokio::runtime::Runtime::new().unwrap()),
        }
    }

    fn start(&self, reply: Reply) -> TestServer {
        self.on_runtime(TestServer::start(reply))
    }

    fn start_tls(&self, reply: Reply, ca: &TestCa, name: &str) -> TestServer {
        self.on_runtime(TestServer::start_tls(reply, ca.server_config(name)))
    }

    /// Runs `start` on the servers' runtime, from a thread outside the test's runtime.
    fn on_runtime<F>(&self, start: F) -> TestServer
    where
        F: std::future::Future<Output = TestServer> + Send + 'static,
    {
        let handle = self.runtime.as_ref().unwrap().handle().clone();
        std::thread::spawn(move || handle.block_on(start))
            .join()
            .unwrap()
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

#[sqlx::test(migrations = false)]
async fn a_granted_destination_answers_over_http_and_https_through_sluice_worker(pool: PgPool) {
    let servers = Servers::new();
    let plain = servers.start(Reply::ok("hello"));
    let slow = servers.start(Reply::Delay(Duration::from_secs(10)));
    let ca = TestCa::new();
    let tls = servers.start_tls(Reply::ok("secure hello"), &ca, "localhost");
    let ca_file = std::env::temp_dir().join(format!("sluice-e2e-ca-{}.pem", tls.port()));
    std::fs::write(&ca_file, ca.pem()).unwrap();

    let sluice = Sluice::migrated(&pool);
    let plain_origin = format!("http://127.0.0.1:{}", plain.port());
    let tls_origin = format!("https://localhost:{}", tls.port());
    sluice.define(
        "fetch",
        "http-get",
        &[
            "--allow-http",
            &plain_origin,
            "--allow-http",
            &tls_origin,
            "--egress-allow-network",
            LOOPBACK,
        ],
    );
    // Stored normalised, and shown.
    let types = sluice.json(&["types", "list"]);
    assert_eq!(
        types[0]["allow_http"],
        serde_json::json!([format!("{plain_origin}"), format!("{tls_origin}")]),
        "{types}"
    );
    // The same grant with room for one request per attempt (a second type on the same
    // component).
    sluice.ok(&[
        "types",
        "set",
        "fetch-once",
        "--component",
        "http-get",
        "--allow-http",
        &plain_origin,
        "--http-max-requests",
        "1",
        "--egress-allow-network",
        LOOPBACK,
    ]);
    // A type whose first-byte cap (300 ms) is far below the host's (30 s).
    let slow_origin = format!("http://127.0.0.1:{}", slow.port());
    sluice.ok(&[
        "types",
        "set",
        "fetch-slow",
        "--component",
        "http-get",
        "--allow-http",
        &slow_origin,
        "--http-first-byte-timeout",
        "300ms",
        "--egress-allow-network",
        LOOPBACK,
    ]);
    let too_slow = enqueue(
        &sluice,
        "fetch-slow",
        serde_json::json!({ "url": format!("{slow_origin}/slow") }),
    );
    let over_http = enqueue(
        &sluice,
        "fetch",
        serde_json::json!({ "url": format!("{plain_origin}/ok") }),
    );
    let twice = enqueue(
        &sluice,
        "fetch-once",
        serde_json::json!({ "url": format!("{plain_origin}/ok"), "times": 2 }),
    );
    let over_https = enqueue(
        &sluice,
        "fetch",
        serde_json::json!({ "url": format!("{tls_origin}/ok") }),
    );

    let summary = sluice.json(&[
        "worker",
        "--drain",
        "--egress-allow-network",
        LOOPBACK,
        "--egress-ca-file",
        ca_file.to_str().unwrap(),
    ]);
    assert_eq!(
        (summary["completed"].as_u64(), summary["dead"].as_u64()),
        (Some(2), Some(2)),
        "{summary}"
    );
    let job = show(&sluice, &too_slow);
    let error = job["last_error"].as_str().unwrap_or_default();
    assert!(error.contains("connection-read-timeout"), "{job}");
    assert_eq!(slow.requests().len(), 1, "the slow server got the request");
    let job = show(&sluice, &twice);
    let error = job["last_error"].as_str().unwrap_or_default();
    assert!(
        error.contains("HTTP-request-denied"),
        "the second request: {job}"
    );
    let job = show(&sluice, &over_http);
    assert_eq!(job["state"], "completed", "{job}");
    let out = output(&job);
    assert_eq!(
        (out["status"].as_u64(), out["body_head"].as_str()),
        (Some(200), Some("hello"))
    );
    let job = show(&sluice, &over_https);
    assert_eq!(job["state"], "completed", "{job}");
    assert_eq!(output(&job)["body_head"], "secure hello");
    // One request of `fetch`, the first of `fetch-once`; its second never left.
    assert_eq!(plain.requests().len(), 2);
    assert!(plain.requests().iter().all(|r| r.target == "/ok"));
    assert_eq!(tls.requests().len(), 1);
    let _ = std::fs::remove_file(ca_file);
}

#[sqlx::test(migrations = false)]
async fn every_refused_destination_reaches_nothing_and_the_job_follows_its_task(pool: PgPool) {
    let servers = Servers::new();
    let server = servers.start(Reply::ok("hello"));
    let port = server.port();
    let sluice = Sluice::migrated(&pool);
    let origin = format!("http://127.0.0.1:{port}");
    sluice.define(
        "fetch",
        "http-get",
        &[
            "--allow-http",
            &origin,
            "--egress-allow-network",
            LOOPBACK,
            "--max-attempts",
            "3",
        ],
    );
    let refused = [
        format!("http://localhost:{port}/ok"),
        format!("http://127.0.0.1:{}/ok", port.wrapping_add(1)),
        "http://10.0.0.1/".to_owned(),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        format!("http://[::1]:{port}/ok"),
        format!("http://[::ffff:127.0.0.1]:{port}/ok"),
        format!("http://[::127.0.0.1]:{port}/ok"),
        format!("http://0.0.0.0:{port}/ok"),
        format!("http://2130706433:{port}/ok"),
        format!("ftp://127.0.0.1:{port}/ok"),
        "https://example.com/".to_owned(),
    ];
    let ids: Vec<(String, String)> = refused
        .iter()
        .map(|url| {
            (
                url.clone(),
                enqueue(&sluice, "fetch", serde_json::json!({ "url": url })),
            )
        })
        .collect();
    // The worker opened the test network: only the allow list refuses these.
    let summary = sluice.json(&["worker", "--drain", "--egress-allow-network", LOOPBACK]);
    assert_eq!(summary["dead"], refused.len(), "{summary}");

    // A worker without the operator's flag grants nothing of a stored IP literal.
    let listed = enqueue(
        &sluice,
        "fetch",
        serde_json::json!({ "url": format!("{origin}/ok") }),
    );
    let summary = sluice.json(&["worker", "--drain"]);
    assert_eq!(summary["dead"], 1, "{summary}");

    for (url, id) in ids.iter().chain([&(format!("{origin}/ok"), listed)]) {
        let job = show(&sluice, id);
        assert_eq!(job["state"], "dead", "{url}: {job}");
        // http-get ends a refused request `fatal`: one attempt, not three.
        assert_eq!(job["attempt"], 1, "{url}: {job}");
        let error = job["last_error"].as_str().unwrap();
        assert!(
            error.contains("HTTP-request-denied") || error.contains("destination-IP-prohibited"),
            "{url}: {error}"
        );
    }
    assert_eq!(server.accepts(), 0, "the server saw a connection");
}

#[sqlx::test(migrations = false)]
async fn bad_allow_lists_are_refused_when_set_and_a_tenant_bound_only_narrows(pool: PgPool) {
    let sluice = Sluice::migrated(&pool);
    let file = crate::support::sample("http-get");
    sluice.ok(&[
        "component",
        "push",
        file.to_str().unwrap(),
        "--name",
        "http-get",
    ]);
    for bad in [
        "ftp://x.example.com",
        "https://",
        "https://*.",
        "https://api.example.com/v1",
        "http://10.0.0.1",
        "http://127.0.0.1:8080",
        "https://user@api.example.com",
    ] {
        let out = sluice.run(&[
            "types",
            "set",
            "fetch",
            "--component",
            "http-get",
            "--allow-http",
            bad,
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{bad} was accepted");
        assert!(stderr.contains(bad), "{bad}: {stderr}");
    }
    assert_eq!(
        sluice.json(&["types", "list"]),
        serde_json::json!([]),
        "nothing stored"
    );

    sluice.ok(&[
        "tenants",
        "egress",
        "default",
        "--allow",
        "https://*.example.com",
    ]);
    let out = sluice.run(&[
        "types",
        "set",
        "fetch",
        "--component",
        "http-get",
        "--allow-http",
        "https://evil.test",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("evil.test") && stderr.contains("tenants egress"),
        "{stderr}"
    );
    sluice.ok(&[
        "types",
        "set",
        "fetch",
        "--component",
        "http-get",
        "--allow-http",
        "https://api.example.com",
    ]);
    let types = sluice.json(&["types", "list"]);
    assert_eq!(
        types[0]["allow_http"],
        serde_json::json!(["https://api.example.com:443"])
    );
    // --deny-all: the tenant may grant nothing from now on.
    let tenant = sluice.json(&["tenants", "egress", "default", "--deny-all"]);
    assert_eq!(tenant["egress_allow"], serde_json::json!([]), "{tenant}");
    let out = sluice.run(&[
        "types",
        "set",
        "fetch",
        "--component",
        "http-get",
        "--allow-http",
        "https://api.example.com",
    ]);
    assert!(!out.status.success());

    // The worker's egress flags: each bad value stops it at start, naming the flag.
    let not_pem = std::env::temp_dir().join(format!("sluice-e2e-not-pem-{}", std::process::id()));
    std::fs::write(&not_pem, "not a certificate").unwrap();
    let missing = not_pem.with_extension("missing");
    for (flag, value) in [
        ("--egress-ca-file", not_pem.to_str().unwrap()),
        ("--egress-ca-file", missing.to_str().unwrap()),
        ("--egress-allow-network", "10.1.0.0/99"),
    ] {
        let out = sluice.run(&["worker", "--drain", flag, value]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flag} {value} was accepted");
        assert!(
            stderr.contains(flag) && stderr.contains(value),
            "{flag} {value}: {stderr}"
        );
    }
    let _ = std::fs::remove_file(not_pem);
}

#[sqlx::test(migrations = false)]
async fn a_host_limited_to_0_1_leaves_0_2_jobs_pending_for_a_newer_host(pool: PgPool) {
    let servers = Servers::new();
    let server = servers.start(Reply::ok("hello"));
    let sluice = Sluice::migrated(&pool);
    let origin = format!("http://127.0.0.1:{}", server.port());
    sluice.define("echo", "echo", &[]);
    sluice.define(
        "fetch",
        "http-get",
        &["--allow-http", &origin, "--egress-allow-network", LOOPBACK],
    );
    let components = sluice.json(&["component", "list"]);
    let contract_of = |name: &str| {
        components
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .map(|c| c["contract"].clone())
            .unwrap()
    };
    assert_eq!(
        (contract_of("echo"), contract_of("http-get")),
        ("sluice:task@0.1.0".into(), "sluice:task@0.2.0".into())
    );

    let newer = enqueue(
        &sluice,
        "fetch",
        serde_json::json!({ "url": format!("{origin}/ok") }),
    );
    let older = enqueue(&sluice, "echo", serde_json::json!({ "n": 1 }));
    let mut old_host = WorkerProcess::spawn(
        &sluice,
        "old-host",
        &[
            "--max-contract",
            "0.1",
            "--egress-allow-network",
            LOOPBACK,
            "--poll-interval",
            "100ms",
        ],
    );
    wait_for(
        "the old host to run the 0.1 job",
        Duration::from_secs(30),
        || async { (show(&sluice, &older)["state"] == "completed").then_some(()) },
    )
    .await;
    // Several claims later, the 0.2 job is still untouched.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let job = &sluice.json(&["jobs", "show", &newer]);
    assert_eq!(
        (job["state"].as_str(), job["attempt"].as_i64()),
        (Some("pending"), Some(0)),
        "{job}"
    );
    // Never claimed: no attempt was started and given back either.
    let attempts = sluice.json(&["jobs", "attempts", &newer]);
    assert_eq!(attempts, serde_json::json!([]), "{attempts}");
    old_host.signal("TERM");
    assert!(
        old_host
            .wait_timeout(Duration::from_secs(20))
            .is_some_and(|s| s.success())
    );
    assert_eq!(server.accepts(), 0);

    // The newer host runs both contracts side by side in one drain.
    let older_again = enqueue(&sluice, "echo", serde_json::json!({ "n": 2 }));
    let summary = sluice.json(&["worker", "--drain", "--egress-allow-network", LOOPBACK]);
    assert_eq!(summary["completed"], 2, "{summary}");
    let job = show(&sluice, &newer);
    assert_eq!(
        (job["state"].as_str(), job["attempt"].as_i64()),
        (Some("completed"), Some(1))
    );
    assert_eq!(output(&job)["status"], 200);
    assert_eq!(show(&sluice, &older_again)["state"], "completed");
    assert_eq!(server.requests().len(), 1);
}

#[sqlx::test(migrations = false)]
async fn post_json_completes_on_2xx_retries_5xx_and_gives_up_on_4xx(pool: PgPool) {
    let servers = Servers::new();
    let answer = |status: u16, body: &str| Reply::Respond {
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.as_bytes().to_vec(),
    };
    let accepting = servers.start(answer(201, r#"{"invoice":"inv_1"}"#));
    let failing = servers.start(answer(503, r#"{"error":"busy"}"#));
    let refusing = servers.start(answer(422, r#"{"error":"bad vat number"}"#));
    let origin = |s: &TestServer| format!("http://127.0.0.1:{}", s.port());
    let sluice = Sluice::migrated(&pool);
    sluice.define(
        "invoice",
        "post-json",
        &[
            "--allow-http",
            &origin(&accepting),
            "--allow-http",
            &origin(&failing),
            "--allow-http",
            &origin(&refusing),
            "--egress-allow-network",
            LOOPBACK,
            "--max-attempts",
            "2",
            "--backoff-base",
            "10ms",
            "--backoff-cap",
            "20ms",
        ],
    );
    let document = serde_json::json!({ "customer": "acme", "amount_cents": 12_500 });
    let send = |s: &TestServer| {
        let url = format!("{}/invoices", origin(s));
        enqueue(
            &sluice,
            "invoice",
            serde_json::json!({ "url": url, "document": document }),
        )
    };
    let (accepted, busy, refused) = (send(&accepting), send(&failing), send(&refusing));
    let summary = sluice.json(&["worker", "--drain", "--egress-allow-network", LOOPBACK]);
    assert_eq!(
        (summary["completed"].as_u64(), summary["dead"].as_u64()),
        (Some(1), Some(2)),
        "{summary}"
    );

    let job = show(&sluice, &accepted);
    assert_eq!(job["state"], "completed", "{job}");
    let out = output(&job);
    assert_eq!(out["status"], 201, "{out}");
    assert_eq!(
        out["response"],
        serde_json::json!({ "invoice": "inv_1" }),
        "{out}"
    );
    let seen = accepting.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (seen[0].method.as_str(), seen[0].target.as_str()),
        ("POST", "/invoices")
    );
    assert_eq!(seen[0].header("content-type"), Some("application/json"));
    let sent: serde_json::Value = serde_json::from_slice(&seen[0].body).unwrap();
    assert_eq!(sent, document, "the server got the document");

    // 503: retried, then dead when the attempts run out; the server saw both.
    let job = show(&sluice, &busy);
    assert_eq!(
        (job["state"].as_str(), job["attempt"].as_i64()),
        (Some("dead"), Some(2)),
        "{job}"
    );
    assert_eq!(failing.requests().len(), 2);
    // 422: fatal at once; one request.
    let job = show(&sluice, &refused);
    assert_eq!(
        (job["state"].as_str(), job["attempt"].as_i64()),
        (Some("dead"), Some(1)),
        "{job}"
    );
    assert_eq!(refusing.requests().len(), 1);
}
