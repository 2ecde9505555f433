//! Tenant secrets end to end through the real `sluice` binary: set (stdin, --from-file),
//! list and delete over the CLI and the HTTP API, tenant-scoped; a worker without the key,
//! or with another key, leaves jobs of types granted secrets pending without spending an
//! attempt and says why; `bearer-call` reads its secret and sends it as a bearer token to
//! a server on 127.0.0.1, which sees the value, while the worker's log and `last_error`
//! and the stored attempt logs (`sluice jobs logs`) show `[secret NAME]` and a
//! `pg_dump` of the database holds no plain value; another
//! tenant's type granted the same name gets `not-found`; and `secrets rotate-key` while
//! a worker runs loses nothing.

use std::process::Command;
use std::time::Duration;

use crate::egress_support::{Reply, TestServer};
use crate::support::http::{Api, ENV_ADMIN_TOKEN, error_of, json};
use crate::support::secrets::{drain, key_id, keyed, new_key, ok, output_of, set_secret};
use crate::support::worker_process::WorkerProcess;
use crate::support::{Sluice, show, wait_for};
use reqwest::Method;
use serde_json::{Value, json};
use sluice_secrets::{Keyring, SecretKey};
use sqlx::PgPool;

/// The operator's opening for the test server, and nothing else.
const LOOPBACK: &str = "127.0.0.1/32";

fn key_file(hex: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("sluice-e2e-key-{}", key_id(hex)));
    std::fs::write(&path, format!("{hex}\n")).unwrap();
    path
}

fn failed(command: Command, stdin: Option<&[u8]>) -> String {
    let out = output_of(command, stdin);
    assert!(
        !out.status.success(),
        "succeeded: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn enqueue(sluice: &Sluice, tenant: &str, job_type: &str, payload: Value) -> String {
    let args = [
        "--tenant",
        tenant,
        "enqueue",
        job_type,
        "--payload",
        &payload.to_string(),
    ];
    let job = sluice.json(&args);
    job["id"].as_i64().unwrap().to_string()
}

/// `bearer-call` pushed to `tenant` as type `call`, granted `secrets` and `origin`.
fn define_call(sluice: &Sluice, tenant: &str, origin: &str, secrets: &[&str]) {
    let file = crate::support::sample("bearer-call");
    let push = [
        "--tenant",
        tenant,
        "component",
        "push",
        file.to_str().unwrap(),
        "--name",
        "bearer-call",
    ];
    sluice.ok(&push);
    let mut args = vec![
        "--tenant",
        tenant,
        "types",
        "set",
        "call",
        "--component",
        "bearer-call",
        "--allow-http",
        origin,
        "--egress-allow-network",
        LOOPBACK,
        "--max-attempts",
        "1",
    ];
    for name in secrets {
        args.extend(["--secret", name]);
    }
    sluice.ok(&args);
}

/// Test servers on their own runtime (the test's thread blocks on the binary).
fn server(runtime: &tokio::runtime::Runtime) -> TestServer {
    let handle = runtime.handle().clone();
    std::thread::spawn(move || handle.block_on(TestServer::start(Reply::ok("ok"))))
        .join()
        .unwrap()
}

#[sqlx::test(migrations = false)]
async fn secrets_are_set_listed_and_deleted_over_the_cli_and_the_api_per_tenant(pool: PgPool) {
    let sluice = Sluice::migrated(&pool);
    let key = new_key();
    // stdin (one trailing newline dropped) and --from-file.
    set_secret(&sluice, &key, "default", "STDIN_TOKEN", "from-stdin\n");
    let file = std::env::temp_dir().join(format!("sluice-e2e-secret-{}", key_id(&key)));
    std::fs::write(&file, "from-file-value").unwrap();
    let args = [
        "secrets",
        "set",
        "FILE_TOKEN",
        "--from-file",
        file.to_str().unwrap(),
    ];
    let shown = ok(keyed(&sluice, Some(&key), &args), None);
    assert!(!shown.contains("from-file-value"), "{shown}");
    let listed = sluice.json(&["secrets", "list"]);
    let rows: Vec<(String, i64, String)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().into(),
                s["size"].as_i64().unwrap(),
                s["key_id"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("FILE_TOKEN".into(), 15, key_id(&key)),
            ("STDIN_TOKEN".into(), 10, key_id(&key))
        ]
    );
    assert!(!listed.to_string().contains("from-"), "{listed}");
    // Without the key, with a bad key, a bad name or an oversized value: refused, named.
    let err = failed(keyed(&sluice, None, &["secrets", "set", "X"]), Some(b"v"));
    assert!(
        err.contains("--secrets-key-file") && err.contains("SLUICE_SECRETS_KEY"),
        "{err}"
    );
    let err = failed(
        keyed(&sluice, Some("abc"), &["secrets", "set", "X"]),
        Some(b"v"),
    );
    assert!(
        err.contains("SLUICE_SECRETS_KEY: not a secrets key"),
        "{err}"
    );
    let err = failed(
        keyed(&sluice, Some(&key), &["secrets", "set", "1-bad"]),
        Some(b"v"),
    );
    assert!(
        err.contains("invalid name") && err.contains("1-bad"),
        "{err}"
    );
    let big = vec![b'v'; 64 * 1024 + 1];
    let err = failed(
        keyed(&sluice, Some(&key), &["secrets", "set", "BIG"]),
        Some(&big),
    );
    assert!(
        err.contains("invalid value") && err.contains("65537 bytes"),
        "{err}"
    );
    // Another tenant sees nothing and deletes nothing.
    sluice.ok(&["tenants", "create", "beta"]);
    assert_eq!(
        sluice.json(&["--tenant", "beta", "secrets", "list"]),
        json!([])
    );
    let out = sluice.run(&["--tenant", "beta", "secrets", "delete", "FILE_TOKEN"]);
    assert!(!out.status.success());
    sluice.ok(&["secrets", "delete", "FILE_TOKEN"]);
    assert_eq!(
        sluice.json(&["secrets", "list"]).as_array().unwrap().len(),
        1
    );

    // The HTTP API: write-only, scoped by the token's tenant.
    let keyring = Keyring::new(SecretKey::parse("test", &key).unwrap(), Vec::new());
    let api = Api::start_with(
        &pool,
        sluice_http::app_state::ServeConfig {
            admin_token: Some(ENV_ADMIN_TOKEN.into()),
            secrets: Some(keyring),
            ..sluice_http::app_state::ServeConfig::default()
        },
    )
    .await;
    let acme = api.tenant("acme").await;
    let globex = api.tenant("globex").await;
    let put = |token: &str, name: &str, body: Value| {
        api.req(Method::PUT, &format!("/v1/secrets/{name}"), token)
            .json(&body)
            .send()
    };
    let (status, body) = json(
        put(&acme, "API_KEY", json!({ "value": "http-value" }))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["name"].as_str(), body["size"].as_i64()),
        (Some("API_KEY"), Some(10))
    );
    assert!(body.get("value").is_none(), "{body}");
    let (status, body) = json(
        put(&acme, "bad-name", json!({ "value": "v" }))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(error_of(&body).1.contains("name"), "{body}");
    let (status, body) = json(
        put(&acme, "NUL", json!({ "value": "a\u{0}b" }))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(error_of(&body).1.contains("invalid value"), "{body}");
    let (status, body) = json(api.get("/v1/secrets", &acme).await).await;
    assert_eq!(status, 200);
    assert_eq!(body.as_array().unwrap().len(), 1, "{body}");
    assert!(!body.to_string().contains("http-value"), "{body}");
    let (status, body) = json(api.get("/v1/secrets", &globex).await).await;
    assert_eq!((status, body), (200, json!([])));
    let delete = |token: &str| api.req(Method::DELETE, "/v1/secrets/API_KEY", token).send();
    assert_eq!(delete(&globex).await.unwrap().status(), 404);
    assert_eq!(delete(&acme).await.unwrap().status(), 204);
    assert_eq!(delete(&acme).await.unwrap().status(), 404);
    let _ = std::fs::remove_file(file);
}

#[sqlx::test(migrations = false)]
async fn a_worker_that_cannot_open_the_secrets_leaves_their_jobs_pending_and_says_why(
    pool: PgPool,
) {
    let sluice = Sluice::migrated(&pool);
    let key = new_key();
    sluice.define("echo", "echo", &[]);
    define_call(&sluice, "default", "http://127.0.0.1:9", &["API_TOKEN"]);
    set_secret(&sluice, &key, "default", "API_TOKEN", "t0ken");
    let call = enqueue(
        &sluice,
        "default",
        "call",
        json!({ "secret": "API_TOKEN", "url": "http://127.0.0.1:9/" }),
    );

    // No key: other jobs run, the secret-needing one stays pending at attempt 0.
    let worker = WorkerProcess::spawn(
        &sluice,
        "keyless",
        &[
            "--no-listen",
            "--idle-backoff",
            "50ms",
            "--idle-backoff-max",
            "100ms",
        ],
    );
    assert!(
        worker.wait_for_log("no secrets key", Duration::from_secs(30)),
        "{}",
        worker.log()
    );
    let echo = enqueue(&sluice, "default", "echo", json!({ "hi": 1 }));
    wait_for("the echo job", Duration::from_secs(30), || async {
        (show(&sluice, &echo)["state"] == "completed").then_some(())
    })
    .await;
    let job = show(&sluice, &call);
    assert_eq!(
        (job["state"].as_str(), job["attempt"].as_i64()),
        (Some("pending"), Some(0)),
        "{job}"
    );
    drop(worker);

    // Another key: not claimed either, and the worker names the key ids.
    let other = new_key();
    let other_file = key_file(&other);
    let args = [
        "--no-listen",
        "--idle-backoff",
        "50ms",
        "--idle-backoff-max",
        "100ms",
        "--secrets-key-file",
        other_file.to_str().unwrap(),
    ];
    let worker = WorkerProcess::spawn(&sluice, "wrong-key", &args);
    let why = format!("1 under key id {}", key_id(&key));
    assert!(
        worker.wait_for_log(&why, Duration::from_secs(30)),
        "{}",
        worker.log()
    );
    assert!(worker.log().contains(&key_id(&other)), "{}", worker.log());
    let echo = enqueue(&sluice, "default", "echo", json!({ "hi": 2 }));
    wait_for("the second echo job", Duration::from_secs(30), || async {
        (show(&sluice, &echo)["state"] == "completed").then_some(())
    })
    .await;
    let job = show(&sluice, &call);
    assert_eq!(
        (job["state"].as_str(), job["attempt"].as_i64()),
        (Some("pending"), Some(0)),
        "{job}"
    );
    drop(worker);
    let _ = std::fs::remove_file(other_file);
}

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

#[sqlx::test(migrations = false)]
async fn rotate_key_while_a_worker_runs_loses_nothing(pool: PgPool) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = server(&runtime);
    let origin = format!("http://127.0.0.1:{}", server.port());
    let sluice = Sluice::migrated(&pool);
    let (old, new) = (new_key(), new_key());
    define_call(&sluice, "default", &origin, &["S0", "S1", "S2", "S3", "S4"]);
    for i in 0..5 {
        set_secret(
            &sluice,
            &old,
            "default",
            &format!("S{i}"),
            &format!("value-{i}"),
        );
    }
    let enqueue_all = |round: &str| -> Vec<String> {
        (0..5)
            .map(|i| {
                let url = format!("{origin}/{round}/{i}");
                enqueue(
                    &sluice,
                    "default",
                    "call",
                    json!({ "secret": format!("S{i}"), "url": url }),
                )
            })
            .collect()
    };
    let mut jobs = enqueue_all("before");
    // Deploy: the new key current, the old one decrypting.
    let (old_file, new_file) = (key_file(&old), key_file(&new));
    let keys = [
        "--secrets-key-file",
        new_file.to_str().unwrap(),
        "--secrets-old-key-file",
        old_file.to_str().unwrap(),
    ];
    let mut args = vec![
        "--egress-allow-network",
        LOOPBACK,
        "--no-listen",
        "--idle-backoff",
        "20ms",
        "--idle-backoff-max",
        "50ms",
    ];
    args.extend(keys);
    let worker = WorkerProcess::spawn(&sluice, "rotating", &args);
    let mut rotate = vec!["--json", "secrets", "rotate-key", "--batch", "2"];
    rotate.extend(keys);
    let rotating = keyed(&sluice, None, &rotate);
    jobs.extend(enqueue_all("during"));
    let report: Value = serde_json::from_str(ok(rotating, None).lines().last().unwrap()).unwrap();
    assert_eq!(
        (report["resealed"].as_u64(), report["key_id"].as_str()),
        (Some(5), Some(key_id(&new).as_str())),
        "{report}"
    );
    jobs.extend(enqueue_all("after"));
    wait_for("every job", Duration::from_secs(60), || async {
        jobs.iter()
            .all(|id| show(&sluice, id)["state"] == "completed")
            .then_some(())
    })
    .await;
    drop(worker);
    let listed = sluice.json(&["secrets", "list"]);
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["key_id"] == key_id(&new).as_str()),
        "{listed}"
    );
    // Drop the old key: a host with only the new one runs them.
    let last = enqueue(
        &sluice,
        "default",
        "call",
        json!({ "secret": "S3", "url": format!("{origin}/last/3") }),
    );
    let args = [
        "--json",
        "worker",
        "--drain",
        "--egress-allow-network",
        LOOPBACK,
    ];
    ok(keyed(&sluice, Some(&new), &args), None);
    assert_eq!(show(&sluice, &last)["state"], "completed");
    // Every request carried its own secret's value.
    let requests = server.requests();
    assert_eq!(requests.len(), 16, "{requests:?}");
    for request in requests {
        let i = request.target.rsplit('/').next().unwrap();
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer value-{i}").as_str()),
            "{}",
            request.target
        );
    }
    for file in [old_file, new_file] {
        let _ = std::fs::remove_file(file);
    }
    runtime.shutdown_background();
}
