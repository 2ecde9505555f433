//! Tenant secrets and the operator's key: a worker without the key, or with another one,
//! leaves jobs of types granted secrets pending without spending an attempt and says why
//! (naming the key ids); and `secrets rotate-key` while a worker runs loses nothing, every
//! request carrying its own secret's value before, during and after the rotation.

use std::time::Duration;

use super::*;
use crate::support::secrets::{key_id, keyed, new_key, ok, set_secret};
use crate::support::worker_process::WorkerProcess;
use crate::support::{show, wait_for};
use serde_json::json;
use sqlx::PgPool;

/// `hex` in a temporary file, for `--secrets-key-file` and `--secrets-old-key-file`.
fn key_file(hex: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("sluice-e2e-key-{}", key_id(hex)));
    std::fs::write(&path, format!("{hex}\n")).unwrap();
    path
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
