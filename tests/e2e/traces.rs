//! OpenTelemetry traces end to end (docs/observability.md): an OTLP/HTTP JSON receiver
//! on 127.0.0.1 collects what the API and a real worker export. A job enqueued over HTTP
//! with a `traceparent` runs a real component that enqueues a follow-up job, whose real
//! component calls a loopback server: one trace covers the enqueue, both attempts, the
//! follow-up's enqueue and the outbound request, and the request arrives carrying that
//! trace. A secret read is a span naming the secret, never holding its value. With the
//! collector down, a drain completes all the same.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sluice_http::app_state::ServeConfig;
use sqlx::PgPool;

use crate::egress_support::{Reply, TestServer};
use crate::support::Sluice;
use crate::support::http::{Api, json as json_of};

const LOOPBACK: &str = "127.0.0.1/32";
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

/// One exported span, as the receiver got it.
#[derive(Debug, Clone)]
struct Exported {
    service: String,
    trace_id: String,
    span_id: String,
    parent: String,
    name: String,
    kind: i64,
    attributes: HashMap<String, Value>,
    links: Vec<String>,
}

/// Every span of every OTLP/JSON export the receiver got.
fn exported(collector: &TestServer) -> Vec<Exported> {
    let mut spans = Vec::new();
    for request in collector.requests() {
        assert_eq!(request.target, "/v1/traces");
        assert_eq!(request.header("content-type"), Some("application/json"));
        let body: Value = serde_json::from_slice(&request.body).expect("an OTLP/JSON body");
        for resource in body["resourceSpans"].as_array().unwrap() {
            let service = resource["resource"]["attributes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["key"] == "service.name")
                .map(|a| a["value"]["stringValue"].as_str().unwrap().to_owned())
                .unwrap_or_default();
            for scope in resource["scopeSpans"].as_array().unwrap() {
                for span in scope["spans"].as_array().unwrap() {
                    let attributes = span["attributes"]
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .map(|kv| {
                                    let value = kv["value"].as_object().unwrap();
                                    let (_, v) = value.iter().next().unwrap();
                                    (kv["key"].as_str().unwrap().to_owned(), v.clone())
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    let text = |k: &str| span[k].as_str().unwrap_or_default().to_owned();
                    spans.push(Exported {
                        service: service.clone(),
                        trace_id: text("traceId"),
                        span_id: text("spanId"),
                        parent: text("parentSpanId"),
                        name: text("name"),
                        kind: span["kind"].as_i64().unwrap_or(0),
                        attributes,
                        links: span["links"]
                            .as_array()
                            .map(|l| {
                                l.iter()
                                    .map(|l| l["spanId"].as_str().unwrap().to_owned())
                                    .collect()
                            })
                            .unwrap_or_default(),
                    });
                }
            }
        }
    }
    spans
}

fn one<'a>(spans: &'a [Exported], name: &str) -> &'a Exported {
    let found: Vec<&Exported> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "one span `{name}` in {spans:#?}");
    found[0]
}

/// A (non-admin) token of the tenant `default`, which the API's fixture creates.
async fn default_token(api: &Api) -> String {
    api.store
        .create_token("default", false, Some("test"))
        .await
        .unwrap()
        .token
}

fn otel_env(collector: &str) -> Vec<(&'static str, String)> {
    vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.to_owned()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json".to_owned()),
        ("OTEL_BSP_SCHEDULE_DELAY", "100".to_owned()),
    ]
}

/// Runs `sluice worker --drain` with `env`, without blocking the test's runtime (the
/// receivers and the API run on it).
async fn drain(sluice: &Sluice, env: &[(&'static str, String)]) {
    let command = sluice.command(&["worker", "--drain", "--egress-allow-network", LOOPBACK]);
    drain_with(command, env).await;
}

/// Runs the worker `command` with `env`, as [`drain`] does.
async fn drain_with(mut command: std::process::Command, env: &[(&'static str, String)]) {
    for (key, value) in env {
        command.env(key, value);
    }
    let output = tokio::process::Command::from(command)
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "worker failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn one_trace_covers_the_enqueue_the_attempts_the_outbound_request_and_the_follow_up(
    pool: PgPool,
) {
    let collector = TestServer::start(Reply::ok("{}")).await;
    let target = TestServer::start(Reply::ok("pong")).await;
    let collector_url = format!("http://127.0.0.1:{}", collector.port());
    let origin = format!("http://127.0.0.1:{}", target.port());
    let tracer = sluice_trace::Tracer::from_vars("sluice-api", |name| {
        otel_env(&collector_url)
            .into_iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
    })
    .unwrap();
    assert!(tracer.is_enabled());
    let api = Api::start_with(
        &pool,
        ServeConfig {
            tracer: tracer.clone(),
            ..ServeConfig::default()
        },
    )
    .await;
    let token = default_token(&api).await;
    let sluice = Sluice::new(&pool);
    sluice.define("fan", "fan-out", &[]);
    sluice.define(
        "get",
        "http-get",
        &["--allow-http", &origin, "--egress-allow-network", LOOPBACK],
    );

    let traceparent = format!("00-{TRACE_ID}-{CALLER_SPAN}-01");
    let response = api
        .req(reqwest::Method::POST, "/v1/jobs", &token)
        .header("traceparent", &traceparent)
        .header("tracestate", "acme=1")
        .json(&json!({
            "type": "fan",
            "payload": {"type": "get", "count": 1, "payload": {"url": format!("{origin}/x")}},
        }))
        .send()
        .await
        .unwrap();
    let (status, job) = json_of(response).await;
    assert_eq!(status, 201, "{job}");
    let parent_job = job["id"].as_i64().unwrap();

    drain(&sluice, &otel_env(&collector_url)).await;
    assert_eq!(
        target.requests().len(),
        1,
        "the follow-up called the server once"
    );

    // The worker flushed when it stopped; the API exports every 100 ms.
    let deadline = Instant::now() + Duration::from_secs(20);
    let spans = loop {
        let spans = exported(&collector);
        if spans.iter().any(|s| s.name == "enqueue fan") && spans.iter().any(|s| s.name == "GET")
            || Instant::now() > deadline
        {
            break spans;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };

    for span in &spans {
        assert_eq!(
            span.trace_id, TRACE_ID,
            "every span is in the caller's trace: {span:#?}"
        );
    }
    let enqueue = one(&spans, "enqueue fan");
    assert_eq!(
        (enqueue.parent.as_str(), enqueue.service.as_str()),
        (CALLER_SPAN, "sluice-api")
    );
    assert_eq!(enqueue.kind, 4, "producer");
    assert_eq!(
        enqueue.attributes["sluice.job.id"],
        json!(parent_job.to_string())
    );

    let fan = one(&spans, "attempt fan");
    assert_eq!(
        (fan.parent.as_str(), fan.service.as_str()),
        (enqueue.span_id.as_str(), "sluice-worker")
    );
    assert_eq!(fan.kind, 5, "consumer");
    assert_eq!(fan.attributes["sluice.outcome"], json!("completed"));
    assert_eq!(fan.attributes["sluice.attempt"], json!("1"));
    assert_eq!(fan.attributes["sluice.tenant"], json!("default"));
    assert!(fan.attributes.contains_key("sluice.fuel"), "{fan:#?}");
    assert!(fan.attributes.contains_key("sluice.wait_ms"), "{fan:#?}");

    let child_enqueue = one(&spans, "enqueue get");
    assert_eq!(child_enqueue.parent, fan.span_id);
    let child = one(&spans, "attempt get");
    assert_eq!(
        child.parent, child_enqueue.span_id,
        "the follow-up continues its enqueue"
    );
    assert_eq!(child.attributes["sluice.outcome"], json!("completed"));

    let get = one(&spans, "GET");
    assert_eq!(
        (get.parent.as_str(), get.kind),
        (child.span_id.as_str(), 3),
        "client"
    );
    assert_eq!(get.attributes["http.response.status_code"], json!("200"));
    assert_eq!(get.attributes["server.address"], json!("127.0.0.1"));

    // The request arrived with that trace, the client span as its parent, and the state.
    let sent = &target.requests()[0];
    assert_eq!(
        sent.header("traceparent"),
        Some(format!("00-{TRACE_ID}-{}-01", get.span_id).as_str())
    );
    assert_eq!(sent.header("tracestate"), Some("acme=1"));
    assert!(fan.links.is_empty(), "a first attempt links to nothing");
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_drain_with_the_collector_down_completes_every_job(pool: PgPool) {
    // A port nothing listens on: every export fails, no attempt waits for one.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let api = Api::start(&pool).await;
    let sluice = Sluice::new(&pool);
    sluice.define("echo", "echo", &[]);
    let jobs: Vec<sluice_store::NewJob> = (0..50)
        .map(|_| sluice_store::NewJob::new("default", "echo", b"{}".to_vec()))
        .collect();
    api.store.enqueue_many(&jobs).await.unwrap();
    let started = Instant::now();
    drain(&sluice, &otel_env(&down)).await;
    let stats = sluice.json(&["stats"]);
    assert_eq!(stats["totals"]["completed"], 50, "{stats}");
    // Stopping waits for the last export at most a few seconds (the flush).
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_malformed_traceparent_is_refused_on_the_cli_and_ignored_over_http(pool: PgPool) {
    let api = Api::start(&pool).await;
    let token = default_token(&api).await;
    let sluice = Sluice::new(&pool);
    sluice.define("echo", "echo", &[]);
    let out = sluice.run(&["enqueue", "echo", "--traceparent", "00-nope"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--traceparent") && stderr.contains("00-nope"),
        "{stderr}"
    );
    // Over HTTP the job is taken and starts a trace of its own (W3C: ignore it).
    let response = api
        .req(reqwest::Method::POST, "/v1/jobs", &token)
        .header("traceparent", "00-nope")
        .json(&json!({"type": "echo", "payload": {}}))
        .send()
        .await
        .unwrap();
    let (status, job) = json_of(response).await;
    assert_eq!(status, 201, "{job}");
    // A valid one given on the CLI is kept with the job.
    let valid = format!("00-{TRACE_ID}-{CALLER_SPAN}-01");
    let enqueued = sluice.json(&["enqueue", "echo", "--traceparent", &valid]);
    let claimed = api
        .store
        .claim(&sluice_store::ClaimRequest {
            worker: "w".into(),
            limit: 10,
            lease: Duration::from_secs(30),
            tenants: None,
            job_types: None,
            max_contract: u8::MAX,
            secret_keys: Vec::new(),
            skip_tenants: None,
        })
        .await
        .unwrap();
    let kept: Vec<_> = claimed
        .iter()
        .map(|j| (j.id, j.trace.as_ref().map(|t| t.traceparent.clone())))
        .collect();
    assert!(
        kept.contains(&(enqueued["id"].as_i64().unwrap(), Some(valid))),
        "{kept:?}"
    );
    assert!(
        kept.contains(&(job["id"].as_i64().unwrap(), None)),
        "{kept:?}"
    );
}

/// Polls the receiver until a span named `name` arrived (or 20 s passed).
async fn spans_until(collector: &TestServer, name: &str) -> Vec<Exported> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let spans = exported(collector);
        if spans.iter().any(|s| s.name == name) || Instant::now() > deadline {
            return spans;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_secret_read_is_a_span_naming_the_secret_never_its_value(pool: PgPool) {
    const VALUE: &str = "sk_live_tracedsecretvalue";
    let collector = TestServer::start(Reply::ok("{}")).await;
    let target = TestServer::start(Reply::ok("pong")).await;
    let collector_url = format!("http://127.0.0.1:{}", collector.port());
    let origin = format!("http://127.0.0.1:{}", target.port());
    let api = Api::start(&pool).await;
    let sluice = Sluice::new(&pool);
    let key = crate::support::secrets::new_key();
    crate::support::secrets::set_secret(&sluice, &key, "default", "API_KEY", VALUE);
    let grants = ["--allow-http", &origin, "--egress-allow-network", LOOPBACK];
    sluice.define(
        "call",
        "bearer-call",
        &[&grants[..], &["--secret", "API_KEY"]].concat(),
    );
    let payload = json!({"secret": "API_KEY", "url": format!("{origin}/x")});
    let traceparent = format!("00-{TRACE_ID}-{CALLER_SPAN}-01");
    let job = sluice_store::NewJob::new("default", "call", payload.to_string().into_bytes())
        .with_trace(sluice_store::TraceHeaders::new(&traceparent, None).unwrap());
    api.store.enqueue(&job).await.unwrap();

    let worker = crate::support::secrets::keyed(
        &sluice,
        Some(&key),
        &["worker", "--drain", "--egress-allow-network", LOOPBACK],
    );
    drain_with(worker, &otel_env(&collector_url)).await;
    assert_eq!(target.requests().len(), 1, "the task called the server");

    let spans = spans_until(&collector, "secret read").await;
    let attempt = one(&spans, "attempt call");
    assert_eq!(attempt.parent, CALLER_SPAN);
    assert_eq!(attempt.attributes["sluice.outcome"], json!("completed"));
    let read = one(&spans, "secret read");
    assert_eq!(
        (read.trace_id.as_str(), read.parent.as_str()),
        (TRACE_ID, attempt.span_id.as_str())
    );
    assert_eq!(read.kind, 1, "internal");
    assert_eq!(read.attributes["sluice.secret.name"], json!("API_KEY"));
    assert_eq!(read.attributes["sluice.secret.outcome"], json!("found"));
    assert_eq!(one(&spans, "GET").parent, attempt.span_id);
    // The value reached the server, and no export holds it.
    assert!(
        target.requests()[0]
            .header("authorization")
            .is_some_and(|a| a.contains(VALUE))
    );
    for request in collector.requests() {
        let body = String::from_utf8_lossy(&request.body);
        assert!(!body.contains(VALUE), "an export holds the secret: {body}");
    }
}
