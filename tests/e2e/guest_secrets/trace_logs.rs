//! A secret stays out of the worker's own log at every `SLUICE_LOG` level, through the
//! real `sluice` binary (`docs/secrets.md`): `bearer-call` reads its secret and sends it
//! to a server on 127.0.0.1 in the URL's query and as a bearer token while the worker
//! logs at `trace`; the server sees the value, the worker's stderr and stdout never do,
//! though they hold TRACE lines (so tracing was on).

use crate::egress_support::{Reply, TestServer};
use crate::support::secrets::{keyed, new_key, output_of, set_secret};
use crate::support::{Sluice, enqueue, show};
use serde_json::json;
use sqlx::PgPool;

/// The operator's opening for the test server, and nothing else.
const LOOPBACK: &str = "127.0.0.1/32";

#[sqlx::test(migrations = false)]
async fn a_secret_in_a_request_url_and_header_never_reaches_a_trace_log(pool: PgPool) {
    // The server on its own runtime: this test's thread blocks on the binary.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let handle = runtime.handle().clone();
    let server = std::thread::spawn(move || handle.block_on(TestServer::start(Reply::ok("ok"))))
        .join()
        .unwrap();
    let origin = format!("http://127.0.0.1:{}", server.port());
    let sluice = Sluice::migrated(&pool);
    let key = new_key();
    let value = "sk_live_trace9QzW3secretvalue";
    sluice.define(
        "call",
        "bearer-call",
        &[
            "--allow-http",
            &origin,
            "--egress-allow-network",
            LOOPBACK,
            "--secret",
            "API_TOKEN",
            "--max-attempts",
            "1",
        ],
    );
    set_secret(&sluice, &key, "default", "API_TOKEN", value);
    let payload = json!({
        "secret": "API_TOKEN",
        "url": format!("{origin}/charge?region=eu"),
        "query": "api_key",
    });
    let job = enqueue(&sluice, "call", payload);

    let args = ["worker", "--drain", "--egress-allow-network", LOOPBACK];
    let mut worker = keyed(&sluice, Some(&key), &args);
    worker.env("SLUICE_LOG", "trace");
    let out = output_of(worker, None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stderr}");

    // The value really travelled: in the query and in the header.
    assert_eq!(show(&sluice, &job)["state"], "completed");
    let seen = server.requests();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].target, format!("/charge?region=eu&api_key={value}"));
    let bearer = format!("Bearer {value}");
    assert_eq!(seen[0].header("authorization"), Some(bearer.as_str()));
    // Tracing was on, and the value is nowhere in what the worker printed.
    assert!(
        stderr.lines().any(|l| l.contains("TRACE")),
        "no TRACE line: the test proves nothing"
    );
    for (name, text) in [("stderr", &stderr), ("stdout", &stdout)] {
        if let Some(at) = text.find(value) {
            let line = text[..at].rsplit('\n').next().unwrap_or_default();
            panic!("the secret is in the worker's {name}: {line}…");
        }
    }
    runtime.shutdown_background();
}
