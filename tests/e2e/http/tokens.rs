//! Tokens: missing, unknown and revoked tokens get 401; the database never holds a token
//! in clear; the CLI mints, lists and revokes them.

use serde_json::json;
use sqlx::PgPool;

use crate::support::Sluice;
use crate::support::http::{Api, error_of, json};

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn missing_unknown_and_revoked_tokens_get_401(pool: PgPool) {
    let api = Api::start(&pool).await;
    let token = api.tenant("acme").await;
    assert!(
        token.starts_with("sluice_") && token.len() >= 7 + 64,
        "{token}"
    );

    let (status, body) = json(api.get("/v1/jobs", "").await).await;
    assert_eq!(status, 401);
    assert_eq!(error_of(&body).0, "unauthorized");
    let (status, _) = json(api.get("/v1/jobs", "sluice_not-a-real-token").await).await;
    assert_eq!(status, 401);
    let response = api
        .client
        .get(format!("{}/v1/jobs", api.base))
        .header("authorization", format!("Basic {token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
    let (status, _) = json(api.post("/v1/jobs", "", json!({"type": "x"})).await).await;
    assert_eq!(status, 401);

    let (status, _) = json(api.get("/v1/jobs", &token).await).await;
    assert_eq!(status, 200);
    let id = api.store.list_tokens("acme").await.unwrap()[0].id;
    api.store.revoke_token("acme", id).await.unwrap();
    let (status, body) = json(api.get("/v1/jobs", &token).await).await;
    assert_eq!(status, 401, "{body}");
}

#[sqlx::test(migrations = false)]
async fn the_cli_mints_tokens_that_the_database_only_holds_as_hashes(pool: PgPool) {
    let sluice = Sluice::new(&pool);
    sluice.ok(&["migrate"]);
    let created = sluice.json(&["tenants", "create", "acme", "--admin"]);
    let admin = created["token"].as_str().unwrap().to_owned();
    let minted = sluice.json(&["tenants", "token", "create", "acme", "--label", "ci"]);
    let token = minted["token"].as_str().unwrap().to_owned();
    assert_eq!(minted["admin"], false);
    assert_ne!(admin, token);

    let listed = sluice.json(&["tenants", "token", "list", "acme"]);
    let listed_text = listed.to_string();
    assert_eq!(listed.as_array().unwrap().len(), 2);
    assert!(!listed_text.contains(&token[7..]), "list shows no secret");

    // No column of any token row holds the token or its secret part in clear.
    let rows: Vec<String> = sqlx::query_scalar("SELECT t::text FROM sluice.api_tokens t")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(rows.len(), 2);
    for secret in [&admin, &token] {
        let hex_part = &secret[7..];
        for row in &rows {
            assert!(!row.contains(hex_part), "token stored in clear: {row}");
        }
        // The stored form is the SHA-256.
        let hash = sluice_store::token_hash(secret);
        let stored: i64 =
            sqlx::query_scalar("SELECT count(*) FROM sluice.api_tokens WHERE token_hash = $1")
                .bind(&hash[..])
                .fetch_one(&pool)
                .await
                .unwrap();
        assert_eq!(stored, 1);
    }

    let revoked = sluice.json(&[
        "tenants",
        "token",
        "revoke",
        "acme",
        &minted["id"].as_i64().unwrap().to_string(),
    ]);
    assert!(revoked["revoked_at"].is_string(), "{revoked}");
    let api = Api::start(&pool).await;
    let (status, _) = json(api.get("/v1/jobs", &token).await).await;
    assert_eq!(status, 401, "revoked through the CLI");
    let (status, _) = json(api.get("/v1/jobs", &admin).await).await;
    assert_eq!(status, 200, "the admin token still works");

    // Limits through the CLI, with human units.
    let limits = sluice.json(&[
        "tenants",
        "limits",
        "acme",
        "--max-payload",
        "1KiB",
        "--rate",
        "600/min",
        "--burst",
        "20",
        "--max-fuel",
        "1000000",
    ]);
    assert_eq!(limits["max_payload_bytes"], 1024);
    assert_eq!(limits["max_enqueue_per_sec"], 10.0);
    assert_eq!(limits["enqueue_burst"], 20);
    let limits = sluice.json(&["tenants", "limits", "acme", "--unset", "rate"]);
    assert!(limits["max_enqueue_per_sec"].is_null());
    assert_eq!(limits["max_fuel"], 1_000_000, "other limits are kept");
    let out = sluice.run(&["tenants", "limits", "nobody", "--rate", "5/s"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nobody"));
}

/// A read-only token reads, and every route of the OpenAPI document that could change
/// something (any method but GET) refuses it with 403 before doing anything.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_read_only_token_reads_and_every_other_request_is_refused(pool: PgPool) {
    let api = Api::start(&pool).await;
    let writer = api.tenant("acme").await;
    api.job_type("acme", "echo", "echo").await;
    let (status, _) = json(api.post("/v1/jobs", &writer, json!({"type": "echo"})).await).await;
    assert_eq!(status, 201);
    let reader = api
        .store
        .create_token_with("acme", false, true, Some("dashboard"))
        .await
        .unwrap();
    assert!(reader.record.read_only);
    let reader = reader.token;

    let (status, jobs) = json(api.get("/v1/jobs", &reader).await).await;
    assert_eq!(status, 200, "{jobs}");
    let (_, doc) = json(api.get("/v1/openapi.json", "").await).await;
    let mut refused = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, _) in item.as_object().unwrap() {
            if method == "get" || method == "head" || method == "parameters" {
                continue;
            }
            let concrete = path
                .replace("{id}", "1")
                .replace("{name}", "x")
                .replace("{type}", "echo")
                .replace("{n}", "1");
            let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let response = api
                .req(method.clone(), &concrete, &reader)
                .json(&json!({}))
                .send()
                .await
                .unwrap();
            let (status, body) = json(response).await;
            assert_eq!(status, 403, "{method} {concrete}: {body}");
            assert_eq!(error_of(&body).0, "read_only_token", "{method} {concrete}");
            refused += 1;
        }
    }
    assert!(
        refused >= 15,
        "only {refused} writing routes in the document"
    );
    // Nothing was written: still the one job, pending.
    let (_, jobs) = json(api.get("/v1/jobs", &writer).await).await;
    assert_eq!(jobs["jobs"].as_array().map(Vec::len), Some(1), "{jobs}");

    // The CLI mints and lists them.
    let sluice = Sluice::new(&pool);
    let minted = sluice.json(&["tenants", "token", "create", "acme", "--read-only"]);
    assert_eq!(minted["read_only"], true, "{minted}");
    let listed = sluice.json(&["tenants", "token", "list", "acme"]);
    let flags: Vec<bool> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["read_only"].as_bool().unwrap())
        .collect();
    assert_eq!(flags.iter().filter(|r| **r).count(), 2, "{listed}");
}
