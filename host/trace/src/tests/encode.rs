//! The two OTLP encodings of a span: JSON field names and forms, protobuf round trip and
//! golden bytes against the field numbers of `opentelemetry-proto`.

use std::time::{Duration, UNIX_EPOCH};

use prost::Message;
use serde_json::json;

use crate::data::SpanData;
use crate::proto::{self, ExportTraceServiceRequest};
use crate::{SpanId, SpanKind, TraceId, Value, json};

fn sample_span() -> SpanData {
    SpanData {
        name: "job.run".into(),
        kind: SpanKind::Consumer,
        trace_id: TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
        span_id: SpanId::from_hex("00f067aa0ba902b7").unwrap(),
        parent_span_id: Some(SpanId::from_hex("b7ad6b7169203331").unwrap()),
        trace_state: Some("congo=t61rcWkgMzE".into()),
        start: UNIX_EPOCH + Duration::from_nanos(1_700_000_000_123_456_789),
        end: UNIX_EPOCH + Duration::from_nanos(1_700_000_001_000_000_000),
        attributes: vec![
            ("sluice.job.id", Value::Int(42)),
            ("sluice.job.type", Value::Str("resize".into())),
            ("sluice.retry", Value::Bool(true)),
            ("sluice.fuel.ratio", Value::Float(0.5)),
        ],
        links: vec![(
            TraceId::from_hex("0af7651916cd43dd8448eb211c80319c").unwrap(),
            SpanId::from_hex("53995c3f42cd8ad8").unwrap(),
        )],
        error: Some("trap: unreachable".into()),
    }
}

fn resource() -> Vec<(String, String)> {
    vec![("service.name".into(), "sluice-worker".into())]
}

#[test]
fn json_uses_the_otlp_field_names_hex_ids_and_string_times() {
    let body = json::encode(&resource(), &[sample_span()]);
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let rs = &v["resourceSpans"][0];
    assert_eq!(
        rs["resource"]["attributes"],
        json!([{"key": "service.name", "value": {"stringValue": "sluice-worker"}}])
    );
    let ss = &rs["scopeSpans"][0];
    assert_eq!(ss["scope"]["name"], "sluice");
    let span = &ss["spans"][0];
    assert_eq!(
        *span,
        json!({
            "traceId": "4bf92f3577b34da6a3ce929d0e0e4736",
            "spanId": "00f067aa0ba902b7",
            "traceState": "congo=t61rcWkgMzE",
            "parentSpanId": "b7ad6b7169203331",
            "flags": 1,
            "name": "job.run",
            "kind": 5,
            "startTimeUnixNano": "1700000000123456789",
            "endTimeUnixNano": "1700000001000000000",
            "attributes": [
                {"key": "sluice.job.id", "value": {"intValue": "42"}},
                {"key": "sluice.job.type", "value": {"stringValue": "resize"}},
                {"key": "sluice.retry", "value": {"boolValue": true}},
                {"key": "sluice.fuel.ratio", "value": {"doubleValue": 0.5}},
            ],
            "links": [{"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "53995c3f42cd8ad8"}],
            "status": {"message": "trap: unreachable", "code": 2},
        })
    );
}

#[test]
fn json_leaves_empty_fields_out() {
    let span = SpanData {
        parent_span_id: None,
        trace_state: None,
        attributes: Vec::new(),
        links: Vec::new(),
        error: None,
        kind: SpanKind::Internal,
        ..sample_span()
    };
    let body = json::encode(&resource(), &[span]);
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let span = v["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
        .as_object()
        .unwrap();
    let mut keys: Vec<&str> = span.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "endTimeUnixNano",
            "flags",
            "kind",
            "name",
            "spanId",
            "startTimeUnixNano",
            "traceId"
        ]
    );
    assert_eq!(span["kind"], 1);
}

#[test]
fn json_writes_non_finite_doubles_as_strings() {
    let span = SpanData {
        attributes: vec![
            ("nan", Value::Float(f64::NAN)),
            ("inf", Value::Float(f64::INFINITY)),
            ("ninf", Value::Float(f64::NEG_INFINITY)),
        ],
        ..sample_span()
    };
    let v: serde_json::Value = serde_json::from_slice(&json::encode(&[], &[span])).unwrap();
    let attrs = &v["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"];
    assert_eq!(attrs[0]["value"]["doubleValue"], "NaN");
    assert_eq!(attrs[1]["value"]["doubleValue"], "Infinity");
    assert_eq!(attrs[2]["value"]["doubleValue"], "-Infinity");
}

#[test]
fn protobuf_decodes_back_into_the_same_structs() {
    let res = proto::resource(&resource());
    let request = proto::request(&res, &[sample_span(), sample_span()]);
    let bytes = proto::encode(&res, &[sample_span(), sample_span()]);
    let decoded = ExportTraceServiceRequest::decode(bytes.as_slice()).unwrap();
    assert_eq!(decoded, request);
    let span = &decoded.resource_spans[0].scope_spans[0].spans[0];
    assert_eq!(
        span.trace_id,
        TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736")
            .unwrap()
            .0
    );
    assert_eq!(
        span.parent_span_id,
        SpanId::from_hex("b7ad6b7169203331").unwrap().0
    );
    assert_eq!(span.kind, 5);
    assert_eq!(span.start_time_unix_nano, 1_700_000_000_123_456_789);
    assert_eq!(span.flags, 1);
    assert_eq!(span.status.as_ref().unwrap().code, 2);
    assert_eq!(span.links.len(), 1);
    assert_eq!(
        decoded.resource_spans[0].scope_spans[0]
            .scope
            .as_ref()
            .unwrap()
            .name,
        "sluice"
    );
}

/// Golden bytes, each field's key written out from `trace.proto` / `common.proto`:
/// key = (field number << 3) | wire type (0 varint, 1 fixed64, 2 length-delimited,
/// 5 fixed32).
#[test]
fn protobuf_bytes_follow_the_official_field_numbers() {
    let span = proto::Span {
        trace_id: vec![0x11; 16],
        span_id: vec![0x22; 8],
        trace_state: String::new(),
        parent_span_id: vec![0x33; 8],
        name: "x".into(),
        kind: 2,
        start_time_unix_nano: 1,
        end_time_unix_nano: 2,
        attributes: vec![proto::key_value("k", &Value::Int(7))],
        links: vec![proto::Link {
            trace_id: vec![0x44; 16],
            span_id: vec![0x55; 8],
            trace_state: String::new(),
            attributes: Vec::new(),
            flags: 0,
        }],
        status: Some(proto::Status {
            message: "e".into(),
            code: 2,
        }),
        flags: 1,
    };
    let mut want = Vec::new();
    want.extend([0x0a, 16]); // 1 trace_id: bytes
    want.extend([0x11; 16]);
    want.extend([0x12, 8]); // 2 span_id: bytes
    want.extend([0x22; 8]);
    want.extend([0x22, 8]); // 4 parent_span_id: bytes
    want.extend([0x33; 8]);
    want.extend([0x2a, 1, b'x']); // 5 name: string
    want.extend([0x30, 2]); // 6 kind: enum SPAN_KIND_SERVER
    want.extend([0x39, 1, 0, 0, 0, 0, 0, 0, 0]); // 7 start_time_unix_nano: fixed64
    want.extend([0x41, 2, 0, 0, 0, 0, 0, 0, 0]); // 8 end_time_unix_nano: fixed64
    // 9 attributes: KeyValue { 1 key: "k", 2 value: AnyValue { 3 int_value: 7 } }
    want.extend([0x4a, 7, 0x0a, 1, b'k', 0x12, 2, 0x18, 7]);
    // 13 links: Link { 1 trace_id, 2 span_id }
    want.extend([0x6a, 28, 0x0a, 16]);
    want.extend([0x44; 16]);
    want.extend([0x12, 8]);
    want.extend([0x55; 8]);
    want.extend([0x7a, 5, 0x12, 1, b'e', 0x18, 2]); // 15 status: { 2 message, 3 code ERROR }
    want.extend([0x85, 0x01, 1, 0, 0, 0]); // 16 flags: fixed32 (key 133 as a varint)
    assert_eq!(span.encode_to_vec(), want);

    // ExportTraceServiceRequest { 1 resource_spans: ResourceSpans { 1 resource: Resource
    // { 1 attributes }, 2 scope_spans: ScopeSpans { 1 scope: { 1 name, 2 version } } } }
    let request = ExportTraceServiceRequest {
        resource_spans: vec![proto::ResourceSpans {
            resource: Some(proto::Resource {
                attributes: vec![proto::key_value("a", &Value::Bool(true))],
            }),
            scope_spans: vec![proto::ScopeSpans {
                scope: Some(proto::InstrumentationScope {
                    name: "s".into(),
                    version: "1".into(),
                }),
                spans: Vec::new(),
            }],
        }],
    };
    let want = [
        0x0a, 21, // 1 resource_spans (11 + 10 bytes)
        0x0a, 9, // 1 resource
        0x0a, 7, 0x0a, 1, b'a', 0x12, 2, 0x10,
        1, // 1 attributes: { key "a", bool_value true }
        0x12, 8, // 2 scope_spans
        0x0a, 6, 0x0a, 1, b's', 0x12, 1, b'1', // 1 scope { 1 name, 2 version }
    ];
    assert_eq!(request.encode_to_vec(), want[..]);

    // AnyValue's other members: 1 string_value, 4 double_value (fixed64 wire type 1).
    let s = proto::key_value("k", &Value::Str("v".into()))
        .value
        .unwrap();
    assert_eq!(s.encode_to_vec(), [0x0a, 1, b'v']);
    let d = proto::key_value("k", &Value::Float(1.0)).value.unwrap();
    let mut want = vec![0x21];
    want.extend(1.0f64.to_le_bytes());
    assert_eq!(d.encode_to_vec(), want);
}
