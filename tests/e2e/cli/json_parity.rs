//! The CLI's `--json` and the HTTP API print the same objects (issue #37, one wire
//! layer): each thing is made through the real binary, then `sluice X show ID --json` and
//! `GET /v1/X/{id}` (and the lists beside them) are compared as JSON values.

use serde_json::Value;
use sqlx::PgPool;

use crate::support::http::{Api, json};
use crate::support::{Sluice, sample, secrets};

/// `GET path` with `token`: must answer 200; its body.
async fn get(api: &Api, token: &str, path: &str) -> Value {
    let (status, body) = json(api.get(path, token).await).await;
    assert_eq!(status, 200, "GET {path}: {body}");
    body
}

/// The CLI's JSON and the API's for one thing: equal, and not trivially so.
fn same(what: &str, cli: &Value, api: &Value) {
    assert_eq!(
        cli, api,
        "{what}: `sluice … --json` and the HTTP API differ"
    );
    let filled = match cli {
        Value::Object(map) => !map.is_empty(),
        Value::Array(items) => !items.is_empty(),
        _ => false,
    };
    assert!(filled, "{what}: nothing compared: {cli}");
}

#[sqlx::test(migrations = false)]
async fn the_cli_and_the_api_print_the_same_json(pool: PgPool) {
    let sluice = Sluice::new(&pool);
    sluice.ok(&["migrate"]);
    let api = Api::start(&pool).await;
    let token = api
        .store
        .create_token("default", false, Some("parity"))
        .await
        .unwrap()
        .token;

    // Components and job types.
    let echo = sample("echo");
    sluice.ok(&[
        "component",
        "push",
        echo.to_str().unwrap(),
        "--name",
        "echo",
    ]);
    sluice.ok(&[
        "types",
        "set",
        "greet",
        "--component",
        "echo",
        "--timeout",
        "30s",
        "--max-attempts",
        "4",
        "--durable",
    ]);
    let component = sluice.json(&["component", "show", "echo"]);
    same(
        "component",
        &component,
        &get(&api, &token, "/v1/components/echo").await,
    );
    assert_eq!(component["contract"], "sluice:task@0.1.0", "{component}");
    assert_eq!(component["job_types"], serde_json::json!(["greet"]));
    same(
        "component at a version",
        &sluice.json(&["component", "show", "echo@1"]),
        &get(&api, &token, "/v1/components/echo?version=1").await,
    );
    same(
        "components",
        &sluice.json(&["component", "list"]),
        &get(&api, &token, "/v1/components").await,
    );
    let job_type = sluice.json(&["types", "show", "greet"]);
    same(
        "job type",
        &job_type,
        &get(&api, &token, "/v1/job-types/greet").await,
    );
    assert_eq!(job_type["timeout_ms"], 30_000, "{job_type}");
    assert_eq!(job_type["durable"], true, "{job_type}");
    same(
        "job types",
        &sluice.json(&["types", "list"]),
        &get(&api, &token, "/v1/job-types").await,
    );

    // A job that ran: its payload and output are JSON on both, its attempts listed.
    let enqueued = sluice.json(&["enqueue", "greet", "--payload", r#"{"hi":1}"#]);
    let id = enqueued["id"].as_i64().expect("the new job's id");
    sluice.json(&["worker", "--drain"]);
    let job = sluice.json(&["jobs", "show", &id.to_string()]);
    same(
        "job",
        &job,
        &get(&api, &token, &format!("/v1/jobs/{id}")).await,
    );
    assert_eq!(job["state"], "completed", "{job}");
    assert_eq!(job["payload"], serde_json::json!({"hi": 1}), "{job}");
    assert_eq!(
        job["output"],
        serde_json::json!({"hi": 1}),
        "echo's output: {job}"
    );
    let attempts = sluice.json(&["jobs", "attempts", &id.to_string()]);
    same(
        "attempts",
        &attempts,
        &get(&api, &token, &format!("/v1/jobs/{id}/attempts")).await,
    );
    assert_eq!(attempts[0]["outcome"], "completed", "{attempts}");
    let journal = sluice.json(&["jobs", "journal", &id.to_string()]);
    same(
        "journal",
        &journal,
        &get(&api, &token, &format!("/v1/jobs/{id}/journal")).await,
    );
    assert_eq!(journal["job_id"], id, "{journal}");

    // Metered usage over one window, by type (the worker wrote it as it stopped).
    let now = chrono::Utc::now();
    let since = (now - chrono::Duration::hours(1)).to_rfc3339();
    let until = (now + chrono::Duration::hours(1)).to_rfc3339();
    let usage = sluice.json(&[
        "usage", "--since", &since, "--until", &until, "--by", "type",
    ]);
    let query: String = form_urlencoded::Serializer::new(String::new())
        .append_pair("since", &since)
        .append_pair("until", &until)
        .append_pair("by", "type")
        .finish();
    same(
        "usage",
        &usage,
        &get(&api, &token, &format!("/v1/usage?{query}")).await,
    );
    assert_eq!(usage["rows"][0]["job_type"], "greet", "{usage}");
    assert_eq!(usage["rows"][0]["runs"], 1, "{usage}");

    // Schedules.
    sluice.ok(&[
        "schedules",
        "create",
        "nightly",
        "--cron",
        "0 3 * * *",
        "--type",
        "greet",
        "--payload",
        r#"{"n":1}"#,
    ]);
    let schedule = sluice.json(&["schedules", "show", "nightly"]);
    same(
        "schedule",
        &schedule,
        &get(&api, &token, "/v1/schedules/nightly").await,
    );
    assert_eq!(schedule["catch_up"], "latest", "{schedule}");
    same(
        "schedules",
        &sluice.json(&["schedules", "list"]),
        &get(&api, &token, "/v1/schedules").await,
    );

    // Tenants.
    sluice.ok(&["tenants", "limits", "default", "--max-payload", "1MiB"]);
    let tenant = sluice.json(&["tenants", "show", "default"]);
    same(
        "tenant",
        &tenant,
        &get(&api, &token, "/v1/tenants/default").await,
    );
    assert_eq!(tenant["max_payload_bytes"], 1 << 20, "{tenant}");

    // Webhook endpoints (created with the secrets key, read without it).
    let key = secrets::new_key();
    let created: Value = serde_json::from_str(
        secrets::ok(
            secrets::keyed(
                &sluice,
                Some(&key),
                &[
                    "--json",
                    "webhooks",
                    "create",
                    "--url",
                    "https://hooks.example.com/in",
                    "--events",
                    "invoice.*",
                ],
            ),
            None,
        )
        .trim(),
    )
    .unwrap();
    let endpoint = created["id"].as_str().expect("ep_N").to_owned();
    same(
        "webhook endpoint",
        &sluice.json(&["webhooks", "show", &endpoint]),
        &get(&api, &token, &format!("/v1/webhooks/{endpoint}")).await,
    );
    same(
        "webhook endpoints",
        &sluice.json(&["webhooks", "list"]),
        &get(&api, &token, "/v1/webhooks").await,
    );
}

/// The read routes and verbs added for parity answer a missing thing, or another
/// tenant's, with a 404 (HTTP) or a failing command (CLI) that names it.
#[sqlx::test(migrations = false)]
async fn the_new_show_routes_name_what_is_missing_and_hide_other_tenants(pool: PgPool) {
    let sluice = Sluice::new(&pool);
    sluice.ok(&["migrate"]);
    let api = Api::start(&pool).await;
    let mine = api.tenant("mine").await;
    api.tenant("theirs").await;
    api.job_type("theirs", "secret-type", "echo").await;
    for (path, named) in [
        ("/v1/components/nope", "nope"),
        ("/v1/job-types/secret-type", "secret-type"),
        ("/v1/job-types/nope", "nope"),
        ("/v1/tenants/theirs", "theirs"),
        ("/v1/tenants/nope", "nope"),
    ] {
        let (status, body) = json(api.get(path, &mine).await).await;
        assert_eq!(status, 404, "GET {path}: {body}");
        let (code, message) = crate::support::http::error_of(&body);
        assert_eq!(code, "not_found", "GET {path}: {body}");
        assert!(
            message.contains(named),
            "GET {path} names {named}: {message}"
        );
    }
    for (args, named) in [
        (&["types", "show", "nope"][..], "nope"),
        (&["tenants", "show", "nope"][..], "nope"),
        (&["component", "show", "nope"][..], "nope"),
    ] {
        let out = sluice.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "sluice {args:?} must fail");
        assert!(
            stderr.contains(named),
            "sluice {args:?} names {named}: {stderr}"
        );
    }
}
