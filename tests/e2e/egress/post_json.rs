//! `post-json`, a realistic task, against real servers: it completes on a 2xx (the
//! server got the document, the job the response), retries a 5xx until its attempts run
//! out, and gives up on a 4xx at once.

use super::*;
use crate::support::{Sluice, enqueue, output, show};
use sqlx::PgPool;

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
