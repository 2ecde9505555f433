//! Where a job type's outbound HTTP may go, through `sluice worker`: a granted
//! destination answers over HTTP and over HTTPS with a test CA (`--egress-ca-file`),
//! within the type's request count and first-byte cap; and every refused destination (a
//! name, port, address or scheme off the list, or a worker without the operator's
//! `--egress-allow-network`) reaches nothing, the job following its task's choice.

use std::time::Duration;

use super::*;
use crate::support::{Sluice, enqueue, output, show};
use sqlx::PgPool;

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
