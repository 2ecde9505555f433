//! Tenant secrets managed through the real `sluice` binary and the HTTP API: set (stdin,
//! `--from-file`), listed (names, sizes and key ids, never values) and deleted; refused
//! without a key, with a bad key, a bad name or an oversized value, each named; and every
//! operation scoped to its tenant, over the CLI and over the API (write-only there).

use std::process::Command;

use super::*;
use crate::support::http::{Api, ENV_ADMIN_TOKEN, error_of, json};
use crate::support::secrets::{key_id, keyed, new_key, ok, output_of, set_secret};
use reqwest::Method;
use serde_json::json;
use sluice_secrets::{Keyring, SecretKey};
use sqlx::PgPool;

/// Runs `command` (with `stdin`), asserts that it fails, and returns its stderr.
fn failed(command: Command, stdin: Option<&[u8]>) -> String {
    let out = output_of(command, stdin);
    assert!(
        !out.status.success(),
        "succeeded: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
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
