//! A tenant secret read by `bearer-call` reaches its server on 127.0.0.1 as a bearer
//! token, and is masked as `[secret NAME]` everywhere else: the worker's log, the job's
//! `last_error`, the stored attempt logs (`sluice jobs logs`), and a `pg_dump` of the
//! database holds no plain value. A secret granted but not set is `not-found`, one not
//! granted `not-granted`, and another tenant's type granted the same name gets
//! `not-found`, never this tenant's value.

use std::process::Command;

use super::*;
use crate::support::secrets::{drain, new_key, set_secret};
use crate::support::show;
use serde_json::json;
use sqlx::PgPool;

#[sqlx::test(migrations = false)]
async fn a_secret_reaches_its_server_as_a_bearer_token_and_is_masked_everywhere(pool: PgPool) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = server(&runtime);
    let origin = format!("http://127.0.0.1:{}", server.port());
    let sluice = Sluice::migrated(&pool);
    let key = new_key();
    let value = "sk_live_51HcQ9aZ2secretvalue";
    define_call(&sluice, "default", &origin, &["API_TOKEN", "NOT_SET_YET"]);
    set_secret(&sluice, &key, "default", "API_TOKEN", value);
    // Tenant beta grants the same name, which it has not set: never acme's value.
    sluice.ok(&["tenants", "create", "beta"]);
    define_call(&sluice, "beta", &origin, &["API_TOKEN"]);

    let url = format!("{origin}/charge");
    let sent = enqueue(
        &sluice,
        "default",
        "call",
        json!({ "secret": "API_TOKEN", "url": url }),
    );
    let failing = enqueue(
        &sluice,
        "default",
        "call",
        json!({ "secret": "API_TOKEN", "url": url, "fail": true }),
    );
    let unset = enqueue(
        &sluice,
        "default",
        "call",
        json!({ "secret": "NOT_SET_YET", "url": url }),
    );
    let ungranted = enqueue(
        &sluice,
        "default",
        "call",
        json!({ "secret": "OTHER", "url": url }),
    );
    let beta = enqueue(
        &sluice,
        "beta",
        "call",
        json!({ "secret": "API_TOKEN", "url": url }),
    );

    let log = drain(&sluice, &key, LOOPBACK);

    let job = show(&sluice, &sent);
    assert_eq!(job["state"], "completed", "{job}");
    let job = show(&sluice, &failing);
    let error = job["last_error"].as_str().unwrap_or_default();
    assert_eq!(job["state"], "dead", "{job}");
    assert!(
        error.contains("token [secret API_TOKEN]") && !error.contains(value),
        "{error}"
    );
    let job = show(&sluice, &unset);
    assert!(
        job["last_error"]
            .as_str()
            .unwrap_or_default()
            .contains("secret NOT_SET_YET: not-found"),
        "{job}"
    );
    let job = show(&sluice, &ungranted);
    assert!(
        job["last_error"]
            .as_str()
            .unwrap_or_default()
            .contains("secret OTHER: not-granted"),
        "{job}"
    );
    let job = sluice.json(&["--tenant", "beta", "jobs", "show", &beta]);
    assert!(
        job["last_error"]
            .as_str()
            .unwrap_or_default()
            .contains("secret API_TOKEN: not-found"),
        "{job}"
    );

    // The server saw the value, twice (the failing job sent it too); beta's job sent nothing.
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    for request in &requests {
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {value}").as_str())
        );
    }
    // The worker's log shows the guest's lines masked, and why NOT_SET_YET failed.
    assert!(log.contains("with token [secret API_TOKEN]"), "{log}");
    assert!(log.contains("stdout also sees [secret API_TOKEN]"), "{log}");
    assert!(
        log.contains("secret NOT_SET_YET is granted but not set"),
        "{log}"
    );
    assert!(!log.contains(value), "{log}");
    // The stored attempt logs hold the masked lines, never the value (the dump below
    // shows bytea as hex, so the rows are searched as bytes too).
    for job in [&sent, &failing] {
        let stored = sluice.ok(&["jobs", "logs", job]);
        assert!(stored.contains("with token [secret API_TOKEN]"), "{stored}");
        assert!(
            stored.contains("[stdout] ") && !stored.contains(value),
            "{stored}"
        );
    }
    let leaked: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM sluice.attempt_logs WHERE position($1::bytea IN log) > 0",
    )
    .bind(value.as_bytes())
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(leaked, 0);
    // Nothing in the database holds the plain value.
    let dump = Command::new("/usr/bin/pg_dump")
        .arg(&sluice.url)
        .output()
        .expect("run pg_dump");
    assert!(
        dump.status.success(),
        "{}",
        String::from_utf8_lossy(&dump.stderr)
    );
    let dump = String::from_utf8_lossy(&dump.stdout);
    assert!(dump.contains("API_TOKEN"), "the dump has the secrets table");
    assert!(
        !dump.contains(value) && !dump.contains("sk_live_51"),
        "the dump holds the value"
    );
    runtime.shutdown_background();
}
