//! The user surfaces of webhooks, end to end: `sluice webhooks …` and `sluice events send`
//! through the real binary, `sluice.send_event(...)` inside a committed and a rolled-back
//! transaction, and the `/v1/webhooks` + `/v1/events` HTTP API served over the test's own
//! database — create (the secret shown once), list, show, update, disable, enable,
//! rotate-secret, delete; refusals that name the problem and write nothing; one delivery
//! job per matching, enabled endpoint; idempotency keys; and tenant isolation (another
//! tenant's endpoint or delivery is a 404). Delivering (the worker) is tested elsewhere.

use crate::support::Sluice;
use crate::support::http::{Api, ENV_ADMIN_TOKEN, error_of, json};
use crate::support::secrets::{keyed, new_key, ok, output_of};
use reqwest::Method;
use serde_json::{Value, json};
use sluice_secrets::{Keyring, SecretKey};
use sqlx::PgPool;

/// Delivery jobs (`sluice.webhook`) of `tenant`.
async fn deliveries(pool: &PgPool, tenant: &str) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM sluice.jobs WHERE tenant = $1 AND job_type = 'sluice.webhook'",
    )
    .bind(tenant)
    .fetch_one(pool)
    .await
    .unwrap()
}

async fn endpoints(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM sluice.webhook_endpoints")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// `sluice --json ARGS` with the key; the parsed object.
fn keyed_json(sluice: &Sluice, key: &str, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = ok(keyed(sluice, Some(key), &all), None);
    serde_json::from_str(out.lines().last().unwrap()).unwrap()
}

/// Runs `sluice ARGS` (with `key`, or none), requires failure; returns stderr.
fn refused(sluice: &Sluice, key: Option<&str>, args: &[&str]) -> String {
    let out = output_of(keyed(sluice, key, args), None);
    assert!(
        !out.status.success(),
        "sluice {args:?} succeeded: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[sqlx::test(migrations = false)]
async fn endpoints_round_trip_over_the_cli_and_refusals_write_nothing(pool: PgPool) {
    let sluice = Sluice::migrated(&pool);
    let key = new_key();
    // Create: the id and the secret, with the warning that it is shown once.
    let create = [
        "webhooks",
        "create",
        "--url",
        "https://example.com/hooks",
        "--events",
        "invoice.*",
        "--events",
        "user.created,user.deleted",
        "--description",
        "billing",
        "--retry-schedule",
        "5s,5m",
        "--timeout",
        "10s",
    ];
    let out = ok(keyed(&sluice, Some(&key), &create), None);
    assert!(out.contains("ep_1") && out.contains("whsec_"), "{out}");
    assert!(out.contains("shown only this once"), "{out}");
    let created = keyed_json(&sluice, &key, &create);
    assert_eq!(created["id"], "ep_2");
    assert!(created["secret"].as_str().unwrap().starts_with("whsec_"));
    assert_eq!(
        created["events"],
        json!(["invoice.*", "user.created", "user.deleted"])
    );
    assert_eq!(
        (&created["retry_schedule"], &created["timeout"]),
        (&json!(["5s", "5m"]), &json!("10s"))
    );
    // List and show never print a secret.
    let list = sluice.json(&["webhooks", "list"]);
    assert_eq!(list.as_array().unwrap().len(), 2, "{list}");
    assert!(!list.to_string().contains("whsec_"), "{list}");
    let shown = sluice.ok(&["webhooks", "show", "ep_1"]);
    assert!(
        shown.contains("enabled") && !shown.contains("whsec_"),
        "{shown}"
    );
    // Update, disable (the reason is shown), enable, back to the default schedule.
    let args = [
        "webhooks",
        "update",
        "ep_1",
        "--url",
        "https://example.com/v2",
    ];
    assert_eq!(sluice.json(&args)["url"], "https://example.com/v2");
    sluice.ok(&["webhooks", "update", "1", "--disable"]);
    let shown = sluice.ok(&["webhooks", "show", "ep_1"]);
    assert!(shown.contains("disabled: disabled by its owner"), "{shown}");
    let args = [
        "webhooks",
        "update",
        "ep_1",
        "--enable",
        "--default-retry-schedule",
    ];
    let enabled = sluice.json(&args);
    assert_eq!(
        (&enabled["enabled"], &enabled["disabled_reason"]),
        (&json!(true), &Value::Null)
    );
    assert_eq!(enabled["retry_schedule"], Value::Null);
    let shown = sluice.ok(&["webhooks", "show", "ep_1"]);
    assert!(
        shown.contains("default (5s, 5m, 30m, 2h, 5h, 10h, 10h)"),
        "{shown}"
    );
    // Rotate: a different secret; `show` says until when the previous one signs.
    let first = created["secret"].as_str().unwrap().to_owned();
    let rotated = keyed_json(&sluice, &key, &["webhooks", "rotate-secret", "ep_2"]);
    let second = rotated["secret"].as_str().unwrap();
    assert!(second.starts_with("whsec_") && second != first, "{rotated}");
    assert!(rotated["previous_secret_until"].is_string(), "{rotated}");
    let shown = sluice.ok(&["webhooks", "show", "ep_2"]);
    assert!(
        shown.contains("previous secret") && shown.contains("signs until"),
        "{shown}"
    );

    // Refusals name the problem, exit non-zero and write nothing.
    let before = endpoints(&pool).await;
    let base = ["webhooks", "create", "--events", "a.b", "--url"];
    let err = refused(&sluice, Some(&key), &[&base[..], &["ftp://x"]].concat());
    assert!(
        err.contains("invalid url") && err.contains("ftp://x"),
        "{err}"
    );
    let args = [
        "webhooks",
        "create",
        "--url",
        "https://x.test",
        "--events",
        "inv*",
    ];
    let err = refused(&sluice, Some(&key), &args);
    assert!(
        err.contains("invalid events") && err.contains("inv*"),
        "{err}"
    );
    let args = [&["--tenant", "nope"][..], &base[..], &["https://x.test"]].concat();
    let err = refused(&sluice, Some(&key), &args);
    assert!(err.contains("unknown tenant \"nope\""), "{err}");
    let err = refused(&sluice, None, &[&base[..], &["https://x.test"]].concat());
    assert!(
        err.contains("secrets key") && err.contains("SLUICE_SECRETS_KEY"),
        "{err}"
    );
    let err = refused(&sluice, None, &["webhooks", "rotate-secret", "ep_1"]);
    assert!(err.contains("secrets key"), "{err}");
    let err = refused(&sluice, Some(&key), &["webhooks", "show", "ep_99"]);
    assert!(err.contains("ep_99 not found"), "{err}");
    assert_eq!(endpoints(&pool).await, before);

    // Another tenant sees none of them; delete.
    sluice.ok(&["tenants", "create", "beta"]);
    assert_eq!(
        sluice.json(&["--tenant", "beta", "webhooks", "list"]),
        json!([])
    );
    refused(
        &sluice,
        None,
        &["--tenant", "beta", "webhooks", "delete", "ep_1"],
    );
    sluice.ok(&["webhooks", "delete", "ep_1"]);
    let err = refused(&sluice, None, &["webhooks", "show", "ep_1"]);
    assert!(err.contains("not found"), "{err}");
    assert_eq!(endpoints(&pool).await, before - 1);
}

#[sqlx::test(migrations = false)]
async fn an_event_makes_one_delivery_per_matching_enabled_endpoint(pool: PgPool) {
    let sluice = Sluice::migrated(&pool);
    let key = new_key();
    for (url, events) in [
        ("https://a.test/", "invoice.*"),
        ("https://b.test/", "user.*"),
        ("https://c.test/", "*"),
    ] {
        let args = ["webhooks", "create", "--url", url, "--events", events];
        ok(keyed(&sluice, Some(&key), &args), None);
    }
    sluice.ok(&["webhooks", "update", "ep_3", "--disable"]);
    // Matching ep_1; not ep_2 (filter), not ep_3 (disabled).
    let send = [
        "events",
        "send",
        "--type",
        "invoice.paid",
        "--payload",
        r#"{"invoice": 7}"#,
        "--idempotency-key",
        "inv-7",
    ];
    let sent = sluice.json(&send);
    let id = sent["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("evt_"), "{sent}");
    assert_eq!(deliveries(&pool, "default").await, 1);
    let out = sluice.ok(&["webhooks", "deliveries", "ep_1"]);
    assert!(out.contains(&id) && out.contains("invoice.paid"), "{out}");
    let listed = sluice.json(&["webhooks", "deliveries", "ep_1"]);
    let delivery = listed[0]["id"].as_i64().unwrap();
    assert_eq!(
        (&listed[0]["endpoint"], &listed[0]["state"]),
        (&json!("ep_1"), &json!("pending"))
    );
    // The delivery is a job: `jobs list` shows it.
    let jobs = sluice.json(&["jobs", "list"]);
    let types: Vec<&str> = jobs
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["job_type"].as_str().or(j["type"].as_str()).unwrap())
        .collect();
    assert_eq!(types, ["sluice.webhook"], "{jobs}");
    // The same key: the same event, no new job.
    assert_eq!(sluice.json(&send)["id"], id);
    assert_eq!(deliveries(&pool, "default").await, 1);
    // Test ping and redelivery: one new job each, their ids printed.
    let test = sluice.json(&["webhooks", "test", "ep_2"]);
    assert!(
        test["event"].as_str().unwrap().starts_with("evt_"),
        "{test}"
    );
    let again = sluice.json(&["webhooks", "redeliver", &delivery.to_string()]);
    assert!(again["delivery"].as_i64().unwrap() > delivery, "{again}");
    assert_eq!(deliveries(&pool, "default").await, 3);
    // Refused: bad type, bad JSON, unknown tenant; nothing enqueued.
    let err = refused(&sluice, None, &["events", "send", "--type", ".x"]);
    assert!(err.contains("invalid event_type"), "{err}");
    let err = refused(
        &sluice,
        None,
        &["events", "send", "--type", "a", "--payload", "{"],
    );
    assert!(err.contains("--payload is not JSON"), "{err}");
    let args = ["--tenant", "nope", "events", "send", "--type", "a"];
    assert!(refused(&sluice, None, &args).contains("unknown tenant"));
    assert_eq!(deliveries(&pool, "default").await, 3);

    // sluice.send_event in the application's transaction: a rollback leaves nothing.
    let sql = "SELECT sluice.send_event('default', 'invoice.void', '{\"n\": 1}'::jsonb)";
    let mut tx = pool.begin().await.unwrap();
    let _: i64 = sqlx::query_scalar(sql).fetch_one(&mut *tx).await.unwrap();
    tx.rollback().await.unwrap();
    assert_eq!(deliveries(&pool, "default").await, 3);
    let events: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM sluice.webhook_events WHERE event_type = 'invoice.void'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(events, 0);
    let mut tx = pool.begin().await.unwrap();
    let event: i64 = sqlx::query_scalar(sql).fetch_one(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(deliveries(&pool, "default").await, 4);
    let listed = sluice.json(&["webhooks", "deliveries", "ep_1", "--limit", "1"]);
    assert_eq!(listed[0]["event"], format!("evt_{event}"));
}

#[sqlx::test(migrations = false)]
async fn the_http_api_manages_endpoints_and_events_per_tenant(pool: PgPool) {
    let _sluice = Sluice::migrated(&pool);
    let key = new_key();
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
    let call = |method: Method, path: &str, token: &str, body: Option<Value>| {
        let request = api.req(method, path, token);
        let request = match body {
            Some(body) => request.json(&body),
            None => request,
        };
        async move { json(request.send().await.unwrap()).await }
    };

    let body = json!({"url": "https://example.com/h", "events": ["invoice.*"], "retry_schedule": ["5s", "1m"], "timeout": "5s"});
    let (status, created) = call(Method::POST, "/v1/webhooks", &acme, Some(body)).await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("ep_") && created["secret"].as_str().unwrap().starts_with("whsec_"));
    assert_eq!(created["retry_schedule"], json!(["5s", "1m"]));
    let body = json!({"url": "https://example.com/u", "events": ["user.*"]});
    let (status, _) = call(Method::POST, "/v1/webhooks", &acme, Some(body)).await;
    assert_eq!(status, 201);
    // Refusals name the field.
    for (body, field) in [
        (json!({"url": "ftp://x", "events": ["a"]}), "url"),
        (json!({"url": "https://x", "events": ["inv*"]}), "events"),
        (
            json!({"url": "https://x", "events": ["a"], "timeout": "soon"}),
            "timeout",
        ),
        (
            json!({"url": "https://x", "events": ["a"], "retry_schedule": ["1s", "x"]}),
            "retry_schedule[1]",
        ),
        (
            json!({"url": "https://x", "events": ["a"], "colour": 1}),
            "colour",
        ),
    ] {
        let (status, err) = call(Method::POST, "/v1/webhooks", &acme, Some(body)).await;
        assert_eq!(status, 400, "{err}");
        assert!(error_of(&err).1.contains(field), "{field}: {err}");
    }
    let path = format!("/v1/webhooks/{id}");
    let (status, shown) = call(Method::GET, &path, &acme, None).await;
    assert_eq!(
        (status, &shown["url"]),
        (200, &json!("https://example.com/h"))
    );
    assert!(shown.get("secret").is_none(), "{shown}");
    let (status, list) = call(Method::GET, "/v1/webhooks", &acme, None).await;
    assert_eq!((status, list.as_array().unwrap().len()), (200, 2));
    // PATCH: disable, then null = the default schedule.
    let patch = json!({"enabled": false, "description": "paused"});
    let (status, updated) = call(Method::PATCH, &path, &acme, Some(patch)).await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(updated["disabled_reason"], "disabled by its owner");
    let patch = json!({"enabled": true, "retry_schedule": null});
    let (_, updated) = call(Method::PATCH, &path, &acme, Some(patch)).await;
    assert_eq!(
        (
            &updated["enabled"],
            &updated["retry_schedule"],
            &updated["description"]
        ),
        (&json!(true), &Value::Null, &json!("paused"))
    );
    // Rotate: a new secret, the previous one signs for the grace.
    let rotate = format!("{path}/rotate-secret");
    let (status, rotated) = call(Method::POST, &rotate, &acme, Some(json!({"grace": "1h"}))).await;
    assert_eq!(status, 200, "{rotated}");
    assert_ne!(rotated["secret"], created["secret"]);
    assert!(rotated["previous_secret_until"].is_string());
    let (status, err) = call(Method::POST, &rotate, &acme, Some(json!({"grace": "90d"}))).await;
    assert_eq!(status, 400, "{err}");

    // Events: one delivery (ep matching invoice.*), the same id for a repeated key.
    let event = json!({"type": "invoice.paid", "payload": {"n": 1}, "idempotency_key": "k"});
    let (status, sent) = call(Method::POST, "/v1/events", &acme, Some(event.clone())).await;
    assert_eq!(status, 202, "{sent}");
    assert!(sent["id"].as_str().unwrap().starts_with("evt_"));
    let (_, again) = call(Method::POST, "/v1/events", &acme, Some(event)).await;
    assert_eq!(again["id"], sent["id"]);
    assert_eq!(deliveries(&pool, "acme").await, 1);
    let bad = json!({"type": ".x"});
    let (status, err) = call(Method::POST, "/v1/events", &acme, Some(bad)).await;
    assert!(status == 400 && error_of(&err).1.contains("type"), "{err}");
    let (status, listed) = call(Method::GET, &format!("{path}/deliveries"), &acme, None).await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(
        (&listed[0]["event"], &listed[0]["endpoint"]),
        (&sent["id"], &json!(id))
    );
    let delivery = listed[0]["id"].as_i64().unwrap();
    let (status, job) = call(Method::GET, &format!("/v1/jobs/{delivery}"), &acme, None).await;
    assert_eq!(status, 200, "{job}");
    let one = format!("/v1/webhooks/deliveries/{delivery}");
    let (status, shown) = call(Method::GET, &one, &acme, None).await;
    assert_eq!((status, &shown["id"]), (200, &json!(delivery)));
    let (status, test) = call(Method::POST, &format!("{path}/test"), &acme, None).await;
    assert_eq!(status, 202, "{test}");
    let (status, redone) = call(Method::POST, &format!("{one}/redeliver"), &acme, None).await;
    assert_eq!(status, 202, "{redone}");
    assert_eq!(deliveries(&pool, "acme").await, 3);

    // Globex sees none of acme's endpoints or deliveries: 404 everywhere, nothing changed.
    let (_, list) = call(Method::GET, "/v1/webhooks", &globex, None).await;
    assert_eq!(list, json!([]));
    for (method, route, body) in [
        (Method::GET, path.clone(), None),
        (Method::PATCH, path.clone(), Some(json!({"enabled": false}))),
        (Method::GET, format!("{path}/deliveries"), None),
        (Method::POST, format!("{path}/test"), None),
        (Method::POST, rotate.clone(), Some(json!({}))),
        (Method::GET, one.clone(), None),
        (Method::POST, format!("{one}/redeliver"), None),
        (Method::DELETE, path.clone(), None),
    ] {
        let (status, err) = call(method.clone(), &route, &globex, body).await;
        assert_eq!(status, 404, "{method} {route}: {err}");
        assert_eq!(error_of(&err).0, "not_found");
    }
    assert_eq!(deliveries(&pool, "acme").await, 3);
    let (_, shown) = call(Method::GET, &path, &acme, None).await;
    assert_eq!(shown["enabled"], true);
    // Delete: 204, then 404.
    let response = api.req(Method::DELETE, &path, &acme).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 204);
    let (status, _) = call(Method::GET, &path, &acme, None).await;
    assert_eq!(status, 404);

    // The OpenAPI document lists every route.
    let (_, doc) = call(Method::GET, "/v1/openapi.json", "", None).await;
    for (route, method) in [
        ("/v1/webhooks", "post"),
        ("/v1/webhooks", "get"),
        ("/v1/webhooks/{id}", "get"),
        ("/v1/webhooks/{id}", "patch"),
        ("/v1/webhooks/{id}", "delete"),
        ("/v1/webhooks/{id}/rotate-secret", "post"),
        ("/v1/webhooks/{id}/test", "post"),
        ("/v1/webhooks/{id}/deliveries", "get"),
        ("/v1/webhooks/deliveries/{id}", "get"),
        ("/v1/webhooks/deliveries/{id}/redeliver", "post"),
        ("/v1/events", "post"),
    ] {
        assert!(doc["paths"][route][method].is_object(), "{method} {route}");
    }

    // A server without the secrets key refuses to create, 503 with the code.
    drop(api);
    let keyless = Api::start(&pool).await;
    let body = json!({"url": "https://example.com/h", "events": ["*"]});
    let response = keyless
        .req(Method::POST, "/v1/webhooks", &acme)
        .json(&body)
        .send()
        .await;
    let (status, err) = json(response.unwrap()).await;
    assert_eq!(
        (status, error_of(&err).0.as_str()),
        (503, "secrets_key_missing")
    );
}
