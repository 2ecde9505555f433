//! The edges of the input domain over HTTP (issue #16): a NUL in any text field of any
//! route is a 400 naming the field (a 404 for a lookup by name), an instant or delay
//! outside the accepted range is a 400 naming it, a zero timeout means "none", and a
//! request whose body or headers stall gets an answer or a closed connection instead of
//! holding it forever. Nothing here is a 500.

use std::time::Duration;

use reqwest::Method;
use serde_json::json;
use sqlx::PgPool;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::http::{Api, ENV_ADMIN_TOKEN, error_of, job_count, json};
use crate::support::sample;

/// For every text field of every route: the request with a NUL in that field (JSON
/// `\u0000`, or `%00` in a path segment or query parameter) answers 400 whose message
/// starts with `invalid <field>:`, and stores nothing.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_nul_in_any_text_field_is_a_400_naming_the_field(pool: PgPool) {
    let api = Api::start(&pool).await;
    let token = api.tenant("acme").await;
    api.job_type("acme", "echo", "echo").await;
    let echo = std::fs::read(sample("echo")).unwrap();
    let nul = "a\u{0}b";
    let cases: Vec<(Method, String, Option<serde_json::Value>, &str)> = vec![
        (
            Method::POST,
            "/v1/jobs".into(),
            Some(json!({"type": nul})),
            "type",
        ),
        (
            Method::POST,
            "/v1/jobs".into(),
            Some(json!({"type": "echo", "idempotency_key": nul})),
            "idempotency_key",
        ),
        (
            Method::POST,
            "/v1/jobs:batch".into(),
            Some(json!({"jobs": [{"type": "echo"}, {"type": nul}]})),
            "jobs[1].type",
        ),
        (
            Method::POST,
            "/v1/jobs:batch".into(),
            Some(json!({"jobs": [{"type": "echo", "idempotency_key": nul}]})),
            "jobs[0].idempotency_key",
        ),
        (Method::GET, "/v1/jobs?type=a%00b".into(), None, "type"),
        (
            Method::PUT,
            "/v1/job-types/a%00b".into(),
            Some(json!({"component": "echo"})),
            "type",
        ),
        (Method::PUT, "/v1/components/a%00b".into(), None, "name"),
        (
            Method::PUT,
            "/v1/components/echo?version=1%00".into(),
            None,
            "version",
        ),
        (
            Method::POST,
            "/v1/schedules".into(),
            Some(json!({"name": nul, "cron": "0 3 * * *", "type": "echo"})),
            "name",
        ),
        (
            Method::POST,
            "/v1/schedules".into(),
            Some(json!({"name": "n", "cron": "0 3 * * *\u{0}", "type": "echo"})),
            "cron",
        ),
        (
            Method::POST,
            "/v1/schedules".into(),
            Some(json!({"name": "n", "cron": "0 3 * * *", "tz": "UTC\u{0}", "type": "echo"})),
            "tz",
        ),
        (
            Method::POST,
            "/v1/schedules".into(),
            Some(json!({"name": "n", "cron": "0 3 * * *", "type": nul})),
            "type",
        ),
    ];
    for (method, path, body, field) in cases {
        let request = api.req(method.clone(), &path, &token);
        let request = match body {
            Some(body) => request.json(&body),
            // Uploads: a real component, so only the name can be wrong.
            None if method == Method::PUT => request
                .header("content-type", "application/wasm")
                .body(echo.clone()),
            None => request,
        };
        let (status, body) = json(request.send().await.unwrap()).await;
        assert_eq!(status, 400, "{method} {path}: {body}");
        let (code, message) = error_of(&body);
        assert_eq!(code, "invalid_request", "{method} {path}");
        assert!(
            message.starts_with(&format!("invalid {field}: contains a NUL")),
            "{method} {path}: {message}"
        );
    }
    assert_eq!(job_count(&pool, "acme").await, 0, "nothing stored");
    let (_, types) = json(api.get("/v1/job-types", &token).await).await;
    assert_eq!(types.as_array().unwrap().len(), 1, "only echo: {types}");
}

/// A lookup by a name with a NUL is a 404 like any unknown name.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_lookup_by_a_name_with_nul_is_a_404(pool: PgPool) {
    let api = Api::start(&pool).await;
    let token = api.tenant("acme").await;
    for (method, path) in [
        (Method::GET, "/v1/schedules/a%00b"),
        (Method::DELETE, "/v1/schedules/a%00b"),
        (Method::POST, "/v1/schedules/a%00b/pause"),
        (Method::POST, "/v1/schedules/a%00b/resume"),
    ] {
        let (status, body) =
            json(api.req(method.clone(), path, &token).send().await.unwrap()).await;
        assert_eq!(status, 404, "{method} {path}: {body}");
        assert_eq!(error_of(&body).0, "not_found");
    }
    // A job type pointing at a component named with a NUL: that component is not found.
    let (status, body) = json(
        api.req(Method::PUT, "/v1/job-types/t", &token)
            .json(&json!({"component": "ec\u{0}ho"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 404, "{body}");
}

/// A payload is stored as bytes, so a JSON string holding U+0000 is kept as sent.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_payload_with_an_escaped_nul_is_stored_as_sent(pool: PgPool) {
    let api = Api::start(&pool).await;
    let token = api.tenant("acme").await;
    api.job_type("acme", "echo", "echo").await;
    let payload = json!({"note": "a\u{0}b"});
    let (status, created) = json(
        api.post(
            "/v1/jobs",
            &token,
            json!({"type": "echo", "payload": payload}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let (status, shown) = json(
        api.get(&format!("/v1/jobs/{}", created["id"]), &token)
            .await,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(shown["payload"], payload);
}

/// `run_at` outside 1970..=9999 (whatever the JSON parser makes of it) and delays over
/// 100 years are 400s naming the field, in a batch with the element's index.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn instants_and_delays_out_of_range_are_a_400_naming_the_field(pool: PgPool) {
    let api = Api::start(&pool).await;
    let token = api.tenant("acme").await;
    api.job_type("acme", "echo", "echo").await;
    let cases = [
        (
            json!({"type": "echo", "run_at": "1969-12-31T23:59:59Z"}),
            "run_at",
        ),
        (
            json!({"type": "echo", "run_at": "0001-01-01T00:00:00Z"}),
            "run_at",
        ),
        (
            json!({"type": "echo", "run_at": "-4714-01-01T00:00:00Z"}),
            "run_at",
        ),
        (
            json!({"type": "echo", "run_at": "+10000-01-01T00:00:00Z"}),
            "run_at",
        ),
        (json!({"type": "echo", "delay": "101years"}), "delay"),
        (json!({"type": "echo", "delay": "1000000000000s"}), "delay"),
    ];
    for (body, field) in cases {
        let (status, answer) = json(api.post("/v1/jobs", &token, body.clone()).await).await;
        assert_eq!(status, 400, "{body}: {answer}");
        let message = error_of(&answer).1;
        assert!(message.contains(field), "{body}: {message}");
    }
    let (status, answer) = json(
        api.post(
            "/v1/jobs:batch",
            &token,
            json!({"jobs": [{"type": "echo"}, {"type": "echo", "run_at": "1900-01-01T00:00:00Z"}]}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    assert!(
        error_of(&answer).1.starts_with("invalid jobs[1].run_at: "),
        "{answer}"
    );
    assert_eq!(job_count(&pool, "acme").await, 0, "nothing stored");
    for body in [
        json!({"type": "echo", "run_at": "1970-01-01T00:00:00Z"}),
        json!({"type": "echo", "run_at": "9999-12-31T23:59:59.999999Z"}),
        json!({"type": "echo", "delay": "100years"}),
    ] {
        let (status, answer) = json(api.post("/v1/jobs", &token, body.clone()).await).await;
        assert_eq!(status, 201, "{body}: {answer}");
    }
    let (status, page) = json(api.get("/v1/jobs", &token).await).await;
    assert_eq!((status, page["jobs"].as_array().unwrap().len()), (200, 3));
    let (status, _) = json(api.get("/v1/stats", &token).await).await;
    assert_eq!(status, 200);
}

/// `timeout_ms: 0` registers a type without a wall-clock timeout (shown as 0).
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_zero_timeout_registers_a_type_without_a_timeout(pool: PgPool) {
    let api = Api::start(&pool).await;
    let token = api.tenant("acme").await;
    api.job_type("acme", "echo", "echo").await;
    let (status, body) = json(
        api.req(Method::PUT, "/v1/job-types/unbounded", &token)
            .json(&json!({"component": "echo", "timeout_ms": 0}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["timeout_ms"], 0);
}

/// Reads what the server sends until it closes the connection (or 60 s pass, so a
/// regression fails instead of hanging the suite).
async fn read_to_close(stream: &mut tokio::net::TcpStream) -> String {
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut answer))
        .await
        .expect("the server answers or closes instead of waiting forever")
        .ok();
    String::from_utf8_lossy(&answer).into_owned()
}

/// A request that declares a body and sends only part of it gets 408 once the body
/// timeout passes, and its connection is closed.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_stalled_request_body_is_answered_408(pool: PgPool) {
    let api = Api::start_with(
        &pool,
        sluice_http::app_state::ServeConfig {
            admin_token: Some(ENV_ADMIN_TOKEN.into()),
            body_timeout: Duration::from_millis(200),
            ..sluice_http::app_state::ServeConfig::default()
        },
    )
    .await;
    let token = api.tenant("acme").await;
    api.job_type("acme", "echo", "echo").await;
    let address = api.base.trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let head = format!(
        "POST /v1/jobs HTTP/1.1\r\nhost: {address}\r\nauthorization: Bearer {token}\r\n\
         content-type: application/json\r\ncontent-length: 1000\r\n\r\n{{\"type\": "
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let answer = read_to_close(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("request_timeout"), "{answer}");
    assert_eq!(job_count(&pool, "acme").await, 0);

    // An upload stalls the same way.
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let head = format!(
        "PUT /v1/components/echo HTTP/1.1\r\nhost: {address}\r\nauthorization: Bearer {token}\r\n\
         content-type: application/wasm\r\ncontent-length: 100000\r\n\r\n\0asm"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let answer = read_to_close(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
}

/// A connection that sends half a request line is closed once the header timeout
/// passes (axum's own server had none).
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_stalled_request_head_is_closed(pool: PgPool) {
    let store = sluice_store::Store::new(pool.clone());
    store.create_tenant("default").await.unwrap();
    let sandbox = sluice_sandbox::Sandbox::new(sluice_sandbox::SandboxConfig {
        max_concurrency: 1,
        guest_threads: 1,
        ..sluice_sandbox::SandboxConfig::default()
    })
    .unwrap();
    let app = sluice_http::serve::app(sluice_http::app_state::AppState::new(
        store,
        sandbox,
        sluice_http::app_state::ServeConfig::default(),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tokio::spawn(sluice_http::serve::serve_with(
        listener,
        app,
        Duration::from_millis(200),
        std::future::pending(),
    ));
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(b"GET /healthz HTT").await.unwrap();
    let answer = read_to_close(&mut stream).await;
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
        "closed (hyper may say 408 first): {answer:?}"
    );
    server.abort();
}

/// One tenant's row outside the range (written around the constraint, dropped here on
/// purpose, as a row from before migration 10 could have been) breaks no reader: its
/// own listing and job show the clamped instant, and the other tenant's listing, the
/// stats and the metrics refresh all still answer.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_row_outside_the_range_breaks_no_reader_of_any_tenant(pool: PgPool) {
    let api = Api::start(&pool).await;
    let acme = api.tenant("acme").await;
    let globex = api.tenant("globex").await;
    api.job_type("acme", "echo", "echo").await;
    api.job_type("globex", "echo", "echo").await;
    let (status, _) = json(api.post("/v1/jobs", &acme, json!({"type": "echo"})).await).await;
    assert_eq!(status, 201);
    sqlx::raw_sql("ALTER TABLE sluice.jobs DROP CONSTRAINT jobs_run_at_range")
        .execute(&pool)
        .await
        .unwrap();
    let far: i64 = sqlx::query_scalar(
        "INSERT INTO sluice.jobs (tenant, job_type, payload, max_attempts, run_at) \
         VALUES ('globex', 'echo', '\\x7b7d', 1, 'infinity') RETURNING id",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    let (status, page) = json(api.get("/v1/jobs", &globex).await).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["jobs"][0]["run_at"], "9999-12-31T23:59:59.999999Z");
    let (status, job) = json(api.get(&format!("/v1/jobs/{far}"), &globex).await).await;
    assert_eq!(status, 200, "{job}");
    for token in [&acme, &globex] {
        let (status, page) = json(api.get("/v1/jobs", token).await).await;
        assert_eq!(status, 200, "{page}");
        let (status, stats) = json(api.get("/v1/stats", token).await).await;
        assert_eq!(status, 200, "{stats}");
    }
    let metrics = api.get("/metrics", "").await.text().await.unwrap();
    assert!(
        metrics.lines().any(|l| l == "sluice_queue_stats_up 1"),
        "{metrics}"
    );
}
