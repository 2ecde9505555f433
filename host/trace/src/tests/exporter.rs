//! The tracer end to end against a loopback collector: protobuf and JSON exports with
//! their content types and headers, batching, a collector that is down, refuses or
//! hangs, a full queue, shutdown; and contexts when nothing is recorded.

use std::time::{Duration, Instant, SystemTime};

use prost::Message;

use super::collector::{Collector, closed_port_url, vars};
use crate::proto::ExportTraceServiceRequest;
use crate::{SpanId, SpanKind, TraceContext, TraceId, Tracer};

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn tracer(base: &str, extra: &[(&str, &str)]) -> Tracer {
    let mut pairs = vec![("OTEL_EXPORTER_OTLP_ENDPOINT", base)];
    pairs.extend_from_slice(extra);
    let t = Tracer::from_vars("sluice-test", vars(&pairs)).unwrap();
    assert!(t.is_enabled());
    t
}

/// Waits up to 10 s for `done` to hold of the tracer's stats.
async fn until(t: &Tracer, done: impl Fn(crate::TraceStats) -> bool) -> crate::TraceStats {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let stats = t.stats();
        if done(stats) || Instant::now() > deadline {
            return stats;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn protobuf_exports_reach_the_collector_with_the_headers() {
    let mut collector = Collector::start(Some(200)).await;
    let t = tracer(
        &collector.base,
        &[
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "authorization=Bearer%20abc,x-scope=traces",
            ),
            ("OTEL_SERVICE_NAME", "sluice-worker"),
        ],
    );
    let incoming = TraceContext::parse(PARENT, Some("congo=t61rcWkgMzE")).unwrap();
    let mut server = t
        .span("POST /v1/jobs", SpanKind::Server)
        .parent(Some(&incoming))
        .attr("http.request.method", "POST")
        .start();
    assert!(server.is_recording());
    let job = t
        .span("sluice.enqueue", SpanKind::Producer)
        .parent(Some(server.context()))
        .link(TraceId([5; 16]), SpanId([6; 8]))
        .attr("sluice.job.id", 42i64)
        .start();
    let job_context = job.context().clone();
    job.end();
    server.set("http.response.status_code", 201);
    server.error("quota reached");
    server.end();
    t.shutdown(Duration::from_secs(10)).await;

    let r = collector.next().await;
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/traces");
    assert_eq!(r.headers["content-type"], "application/x-protobuf");
    assert_eq!(r.headers["authorization"], "Bearer abc");
    assert_eq!(r.headers["x-scope"], "traces");
    let request = ExportTraceServiceRequest::decode(r.body.as_slice()).unwrap();
    let rs = &request.resource_spans[0];
    let service = &rs.resource.as_ref().unwrap().attributes[0];
    assert_eq!(service.key, "service.name");
    let spans = &rs.scope_spans[0].spans;
    assert_eq!(spans.len(), 2);
    let (job, server) = (&spans[0], &spans[1]);
    assert_eq!(job.name, "sluice.enqueue");
    assert_eq!(job.kind, 4);
    assert_eq!(job.trace_id, incoming.trace_id.0);
    assert_eq!(job.span_id, job_context.span_id.0);
    assert_eq!(job.parent_span_id, server.span_id);
    assert_eq!(job.trace_state, "congo=t61rcWkgMzE");
    assert_eq!(job.links[0].span_id, [6; 8]);
    assert_eq!(server.parent_span_id, incoming.span_id.0);
    assert_eq!(server.status.as_ref().unwrap().message, "quota reached");
    assert_eq!(server.attributes.len(), 2);
    assert!(server.end_time_unix_nano >= server.start_time_unix_nano);
    let stats = t.stats();
    assert_eq!(
        (
            stats.exported_spans,
            stats.dropped_spans,
            stats.failed_exports
        ),
        (2, 0, 0)
    );
}

#[tokio::test]
async fn json_exports_carry_hex_ids_and_the_json_content_type() {
    let mut collector = Collector::start(Some(200)).await;
    let endpoint = format!("{}/custom/path", collector.base);
    let t = Tracer::from_vars(
        "sluice-test",
        vars(&[
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &endpoint),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
            ("OTEL_BSP_SCHEDULE_DELAY", "20"),
        ]),
    )
    .unwrap();
    let span = t
        .span("sluice.attempt", SpanKind::Consumer)
        .root_trace_id(TraceId([0x11; 16]))
        .span_id(SpanId([0x22; 8]))
        .start_time(SystemTime::UNIX_EPOCH + Duration::from_secs(1))
        .start();
    span.end_at(SystemTime::UNIX_EPOCH + Duration::from_secs(2));
    // Sent by the schedule delay, without a shutdown.
    let r = collector.next().await;
    assert_eq!(r.path, "/custom/path");
    assert_eq!(r.headers["content-type"], "application/json");
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let span = &v["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
    assert_eq!(span["traceId"], "11111111111111111111111111111111");
    assert_eq!(span["spanId"], "2222222222222222");
    assert_eq!(span["startTimeUnixNano"], "1000000000");
    assert_eq!(span["endTimeUnixNano"], "2000000000");
    assert_eq!(span["kind"], 5);
    assert!(span.get("parentSpanId").is_none());
    let stats = until(&t, |s| s.exported_spans == 1).await;
    assert_eq!(stats.exported_spans, 1);
}

#[tokio::test]
async fn a_full_batch_is_sent_before_the_schedule_delay() {
    let mut collector = Collector::start(Some(200)).await;
    let t = tracer(
        &collector.base,
        &[
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "2"),
            ("OTEL_BSP_SCHEDULE_DELAY", "600000"),
        ],
    );
    for _ in 0..4 {
        t.span("s", SpanKind::Internal).start().end();
    }
    for _ in 0..2 {
        let r = collector.next().await;
        let request = ExportTraceServiceRequest::decode(r.body.as_slice()).unwrap();
        assert_eq!(request.resource_spans[0].scope_spans[0].spans.len(), 2);
    }
    assert_eq!(until(&t, |s| s.exported_spans == 4).await.exported_spans, 4);
}

#[tokio::test]
async fn a_full_queue_drops_and_counts() {
    let collector = Collector::start(Some(200)).await;
    let t = tracer(&collector.base, &[("OTEL_BSP_MAX_QUEUE_SIZE", "4")]);
    // A current-thread runtime: the exporter cannot run until this test awaits.
    for _ in 0..10 {
        t.span("s", SpanKind::Internal).start().end();
    }
    assert_eq!(t.stats().dropped_spans, 6);
    t.shutdown(Duration::from_secs(10)).await;
    let stats = t.stats();
    assert_eq!((stats.exported_spans, stats.dropped_spans), (4, 6));
    // After shutdown, spans are dropped.
    t.span("late", SpanKind::Internal).start().end();
    assert_eq!(t.stats().dropped_spans, 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_collector_down_ending_spans_never_blocks() {
    let t = tracer(
        &closed_port_url().await,
        &[
            ("OTEL_BSP_MAX_QUEUE_SIZE", "64"),
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "16"),
            ("OTEL_BSP_SCHEDULE_DELAY", "5"),
        ],
    );
    let started = Instant::now();
    for i in 0..5_000 {
        let mut span = t.span("s", SpanKind::Internal).attr("i", i).start();
        span.set("more", true);
        span.end();
    }
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "5000 spans took {took:?}");
    let stats = until(&t, |s| {
        s.failed_exports >= 2 && s.dropped_spans >= 5_000 - 64
    })
    .await;
    assert!(stats.failed_exports >= 2, "{stats:?}");
    assert!(stats.dropped_spans >= 5_000 - 64, "{stats:?}");
    assert_eq!(stats.exported_spans, 0);
    let started = Instant::now();
    t.shutdown(Duration::from_secs(5)).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    let stats = t.stats();
    assert_eq!(stats.dropped_spans, 5_000, "{stats:?}");
}

#[tokio::test]
async fn a_refusing_collector_fails_the_export() {
    let mut collector = Collector::start(Some(503)).await;
    let t = tracer(&collector.base, &[]);
    for _ in 0..3 {
        t.span("s", SpanKind::Internal).start().end();
    }
    t.shutdown(Duration::from_secs(10)).await;
    collector.next().await;
    let stats = t.stats();
    assert_eq!(
        (
            stats.exported_spans,
            stats.dropped_spans,
            stats.failed_exports
        ),
        (0, 3, 1)
    );
}

#[tokio::test]
async fn a_silent_collector_times_the_export_out() {
    let mut collector = Collector::start(None).await;
    let t = tracer(
        &collector.base,
        &[
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "200"),
            ("OTEL_BSP_SCHEDULE_DELAY", "10"),
        ],
    );
    t.span("s", SpanKind::Internal).start().end();
    collector.next().await;
    let stats = until(&t, |s| s.failed_exports == 1).await;
    assert_eq!((stats.failed_exports, stats.dropped_spans), (1, 1));
    // Shutdown waits no longer than asked.
    t.span("s", SpanKind::Internal).start().end();
    let started = Instant::now();
    t.shutdown(Duration::from_millis(50)).await;
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[tokio::test]
async fn a_dropped_span_is_ended_and_exported() {
    let mut collector = Collector::start(Some(200)).await;
    let t = tracer(&collector.base, &[]);
    {
        let _span = t.span("early return", SpanKind::Internal).start();
    }
    t.shutdown(Duration::from_secs(10)).await;
    let r = collector.next().await;
    let request = ExportTraceServiceRequest::decode(r.body.as_slice()).unwrap();
    assert_eq!(
        request.resource_spans[0].scope_spans[0].spans[0].name,
        "early return"
    );
}

#[test]
fn a_disabled_tracer_still_propagates_contexts() {
    let t = Tracer::disabled();
    assert!(!t.is_enabled());
    let parent = TraceContext::parse(PARENT, Some("k=v")).unwrap();
    let mut span = t
        .span("s", SpanKind::Server)
        .parent(Some(&parent))
        .attr("ignored", "x")
        .start();
    span.set("ignored", 1);
    span.error("ignored");
    assert!(!span.is_recording());
    let c = span.context().clone();
    assert_eq!(c.trace_id, parent.trace_id);
    assert_ne!(c.span_id, parent.span_id);
    assert!(c.sampled);
    assert_eq!(c.state.as_deref(), Some("k=v"));
    span.end();

    let unsampled = TraceContext {
        sampled: false,
        ..parent.clone()
    };
    let span = t
        .span("s", SpanKind::Server)
        .parent(Some(&unsampled))
        .start();
    assert!(!span.context().sampled);

    let root = t.span("s", SpanKind::Internal).start();
    assert!(root.context().trace_id.is_valid());
    assert!(!root.context().sampled);
    assert_eq!(root.context().state, None);
    let chosen = t
        .span("s", SpanKind::Internal)
        .root_trace_id(TraceId([3; 16]))
        .span_id(SpanId([4; 8]))
        .start();
    assert_eq!(chosen.context().trace_id, TraceId([3; 16]));
    assert_eq!(chosen.context().span_id, SpanId([4; 8]));
    assert_eq!(t.stats(), crate::TraceStats::default());
}

#[tokio::test]
async fn the_environment_can_turn_tracing_off() {
    let t = Tracer::from_vars("x", vars(&[])).unwrap();
    assert!(!t.is_enabled());
    t.shutdown(Duration::from_secs(1)).await;
    let t = Tracer::from_vars(
        "x",
        vars(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_SDK_DISABLED", "true"),
        ]),
    )
    .unwrap();
    assert!(!t.is_enabled());
}

#[test]
fn an_enabled_tracer_needs_a_runtime() {
    let e = Tracer::from_vars(
        "x",
        vars(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")]),
    )
    .unwrap_err();
    assert!(matches!(e, crate::TraceConfigError::NoRuntime), "{e}");
}

#[tokio::test]
async fn unsampled_spans_are_not_recorded_but_propagate() {
    let collector = Collector::start(Some(200)).await;
    let t = tracer(
        &collector.base,
        &[("OTEL_TRACES_SAMPLER", "parentbased_always_off")],
    );
    let root = t.span("s", SpanKind::Internal).start();
    assert!(!root.is_recording());
    assert!(!root.context().sampled);
    let child = t
        .span("c", SpanKind::Internal)
        .parent(Some(root.context()))
        .start();
    assert!(!child.is_recording());
    assert_eq!(child.context().trace_id, root.context().trace_id);
    // A sampled remote parent is followed.
    let parent = TraceContext::parse(PARENT, None).unwrap();
    let followed = t.span("f", SpanKind::Server).parent(Some(&parent)).start();
    assert!(followed.is_recording());
    assert!(followed.context().sampled);
    drop((root, child, followed));
    t.shutdown(Duration::from_secs(10)).await;
    assert_eq!(t.stats().exported_spans, 1);
}

#[test]
fn spans_and_tracers_cross_threads() {
    fn send<T: Send>() {}
    fn sync<T: Send + Sync>() {}
    send::<crate::Span>();
    send::<crate::SpanBuilder>();
    sync::<Tracer>();
}
