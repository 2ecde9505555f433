//! OTLP/JSON: the same messages as `proto`, following the OTLP/JSON mapping rules —
//! lowerCamelCase field names, trace and span ids as lowercase hex (not base64), 64-bit
//! integers (times, `intValue`) as decimal strings, enums as integers, empty fields left
//! out — and the encoding of a batch of spans.
//!
//! Must not: send anything, or print an id in base64.

use serde::Serialize;

use crate::data::{SpanData, Value, unix_nanos};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ExportTraceServiceRequest<'a> {
    resource_spans: [ResourceSpans<'a>; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResourceSpans<'a> {
    resource: Resource<'a>,
    scope_spans: [ScopeSpans<'a>; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Resource<'a> {
    attributes: Vec<KeyValue<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ScopeSpans<'a> {
    scope: InstrumentationScope,
    spans: Vec<Span<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InstrumentationScope {
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Span<'a> {
    trace_id: String,
    span_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace_state: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_span_id: Option<String>,
    flags: u32,
    name: &'a str,
    kind: i32,
    start_time_unix_nano: String,
    end_time_unix_nano: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    attributes: Vec<KeyValue<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    links: Vec<Link>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<Status<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Link {
    trace_id: String,
    span_id: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Status<'a> {
    #[serde(skip_serializing_if = "str::is_empty")]
    message: &'a str,
    code: i32,
}

#[derive(Serialize)]
struct KeyValue<'a> {
    key: &'a str,
    value: AnyValue<'a>,
}

/// Serialises as `{"stringValue": ...}`, `{"intValue": "..."}`, ...
#[derive(Serialize)]
enum AnyValue<'a> {
    #[serde(rename = "stringValue")]
    Str(&'a str),
    /// int64: a decimal string.
    #[serde(rename = "intValue")]
    Int(String),
    #[serde(rename = "boolValue")]
    Bool(bool),
    #[serde(rename = "doubleValue")]
    Double(Double),
}

/// A JSON number, or `"NaN"`, `"Infinity"`, `"-Infinity"` (JSON has no such numbers).
struct Double(f64);

impl Serialize for Double {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            f if f.is_finite() => s.serialize_f64(f),
            f if f.is_nan() => s.serialize_str("NaN"),
            f if f > 0.0 => s.serialize_str("Infinity"),
            _ => s.serialize_str("-Infinity"),
        }
    }
}

fn key_value<'a>(key: &'a str, value: &'a Value) -> KeyValue<'a> {
    let value = match value {
        Value::Str(s) => AnyValue::Str(s),
        Value::Int(i) => AnyValue::Int(i.to_string()),
        Value::Bool(b) => AnyValue::Bool(*b),
        Value::Float(f) => AnyValue::Double(Double(*f)),
    };
    KeyValue { key, value }
}

fn span(s: &SpanData) -> Span<'_> {
    Span {
        trace_id: s.trace_id.to_string(),
        span_id: s.span_id.to_string(),
        trace_state: s.trace_state.as_deref(),
        parent_span_id: s.parent_span_id.map(|p| p.to_string()),
        flags: crate::proto::FLAGS_SAMPLED,
        name: &s.name,
        kind: s.kind.otlp(),
        start_time_unix_nano: unix_nanos(s.start).to_string(),
        end_time_unix_nano: unix_nanos(s.end).to_string(),
        attributes: s.attributes.iter().map(|(k, v)| key_value(k, v)).collect(),
        links: s
            .links
            .iter()
            .map(|(t, sp)| Link {
                trace_id: t.to_string(),
                span_id: sp.to_string(),
            })
            .collect(),
        status: s.error.as_deref().map(|message| Status {
            message,
            code: crate::proto::STATUS_CODE_ERROR,
        }),
    }
}

/// The JSON body of an export of `spans` under one resource and the `sluice` scope.
pub(crate) fn encode(resource: &[(String, String)], spans: &[SpanData]) -> Vec<u8> {
    let resource_values: Vec<(&str, Value)> = resource
        .iter()
        .map(|(k, v)| (k.as_str(), Value::Str(v.clone())))
        .collect();
    let request = ExportTraceServiceRequest {
        resource_spans: [ResourceSpans {
            resource: Resource {
                attributes: resource_values
                    .iter()
                    .map(|(k, v)| key_value(k, v))
                    .collect(),
            },
            scope_spans: [ScopeSpans {
                scope: InstrumentationScope {
                    name: crate::SCOPE_NAME,
                    version: env!("CARGO_PKG_VERSION"),
                },
                spans: spans.iter().map(span).collect(),
            }],
        }],
    };
    // Serialising plain structs of strings and numbers cannot fail.
    serde_json::to_vec(&request).unwrap_or_default()
}
