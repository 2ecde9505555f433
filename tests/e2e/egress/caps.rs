//! The body caps of outbound HTTP end to end through the real `sluice` binary, as a guest
//! sees them (`docs/egress.md`, Errors): a response body over `--http-max-response-body`
//! — its length declared, or chunked and cut mid-stream — reaches `http-get` as
//! `HTTP-response-body-size`, and a request body over `--http-max-request-body` reaches
//! `post-json` as `HTTP-request-body-size`, its server never contacted.

use crate::egress_support::{Reply, TestServer};
use crate::support::{Sluice, enqueue, show};
use serde_json::json;
use sqlx::PgPool;

/// The operator's opening for the test servers, and nothing else.
const LOOPBACK: &str = "127.0.0.1/32";

#[sqlx::test(migrations = false)]
async fn every_body_over_its_cap_reaches_the_guest_as_its_size_error(pool: PgPool) {
    // Servers on their own runtime: this test's thread blocks on the binary.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let start = |reply: Reply| {
        let handle = runtime.handle().clone();
        std::thread::spawn(move || handle.block_on(TestServer::start(reply)))
            .join()
            .unwrap()
    };
    let chunked = start(Reply::Stall { sent: 64 * 1024 });
    let declared = start(Reply::Respond {
        status: 200,
        headers: vec![],
        body: vec![b'a'; 64 * 1024],
    });
    let upload = start(Reply::ok("stored"));
    let origin = |s: &TestServer| format!("http://127.0.0.1:{}", s.port());

    let sluice = Sluice::migrated(&pool);
    sluice.define(
        "get",
        "http-get",
        &[
            "--allow-http",
            &origin(&chunked),
            "--allow-http",
            &origin(&declared),
            "--egress-allow-network",
            LOOPBACK,
            "--http-max-response-body",
            "1KiB",
            "--max-attempts",
            "1",
        ],
    );
    sluice.define(
        "post",
        "post-json",
        &[
            "--allow-http",
            &origin(&upload),
            "--egress-allow-network",
            LOOPBACK,
            "--http-max-request-body",
            "1KiB",
            "--max-attempts",
            "1",
        ],
    );
    let get = |s: &TestServer| enqueue(&sluice, "get", json!({ "url": origin(s) + "/feed" }));
    let cut_mid_stream = get(&chunked);
    let declared_too_long = get(&declared);
    let document = json!({ "memo": "x".repeat(4096) });
    let upload_too_long = enqueue(
        &sluice,
        "post",
        json!({ "url": origin(&upload) + "/documents", "document": document }),
    );
    sluice.ok(&["worker", "--drain", "--egress-allow-network", LOOPBACK]);

    for (id, code) in [
        (cut_mid_stream, "HTTP-response-body-size"),
        (declared_too_long, "HTTP-response-body-size"),
        (upload_too_long, "HTTP-request-body-size"),
    ] {
        let job = show(&sluice, &id);
        let error = job["last_error"].as_str().unwrap_or_default();
        assert_eq!(job["state"], "dead", "{job}");
        assert!(
            error.contains(&format!("HTTP request failed: {code} ")),
            "the guest should see {code}: {error}"
        );
    }
    // A declared request body over the cap is refused before connecting.
    assert_eq!(upload.accepts(), 0);
    runtime.shutdown_background();
}
