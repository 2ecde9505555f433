//! OTLP/protobuf: the messages of `opentelemetry-proto` this exporter sends, written by
//! hand with the official field numbers (`collector/trace/v1/trace_service.proto`,
//! `trace/v1/trace.proto`, `common/v1/common.proto`, `resource/v1/resource.proto`), and
//! the encoding of a batch of spans.
//!
//! Only the fields Sluice sets are declared (events, array and key-list values, schema
//! URLs and dropped counts are left out; a decoder skips absent fields alike).
//! Must not: send anything, or depend on protoc or a build script.

use prost::Message;

use crate::data::{SpanData, Value, unix_nanos};

/// `ExportTraceServiceRequest` (collector/trace/v1).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ExportTraceServiceRequest {
    #[prost(message, repeated, tag = "1")]
    pub resource_spans: Vec<ResourceSpans>,
}

/// `ResourceSpans` (trace/v1).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ResourceSpans {
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    #[prost(message, repeated, tag = "2")]
    pub scope_spans: Vec<ScopeSpans>,
}

/// `Resource` (resource/v1).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Resource {
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
}

/// `ScopeSpans` (trace/v1).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ScopeSpans {
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    #[prost(message, repeated, tag = "2")]
    pub spans: Vec<Span>,
}

/// `InstrumentationScope` (common/v1).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct InstrumentationScope {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub version: String,
}

/// `Span` (trace/v1). Fields in tag order.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Span {
    #[prost(bytes = "vec", tag = "1")]
    pub trace_id: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub span_id: Vec<u8>,
    #[prost(string, tag = "3")]
    pub trace_state: String,
    #[prost(bytes = "vec", tag = "4")]
    pub parent_span_id: Vec<u8>,
    #[prost(string, tag = "5")]
    pub name: String,
    /// `Span.SpanKind`.
    #[prost(int32, tag = "6")]
    pub kind: i32,
    #[prost(fixed64, tag = "7")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "8")]
    pub end_time_unix_nano: u64,
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
    #[prost(message, repeated, tag = "13")]
    pub links: Vec<Link>,
    #[prost(message, optional, tag = "15")]
    pub status: Option<Status>,
    /// The W3C trace flags in the low 8 bits.
    #[prost(fixed32, tag = "16")]
    pub flags: u32,
}

/// `Span.Link` (trace/v1).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Link {
    #[prost(bytes = "vec", tag = "1")]
    pub trace_id: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub span_id: Vec<u8>,
    #[prost(string, tag = "3")]
    pub trace_state: String,
    #[prost(message, repeated, tag = "4")]
    pub attributes: Vec<KeyValue>,
    #[prost(fixed32, tag = "6")]
    pub flags: u32,
}

/// `Status` (trace/v1); field 1 is reserved.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Status {
    #[prost(string, tag = "2")]
    pub message: String,
    /// `Status.StatusCode`: 0 unset, 1 ok, 2 error.
    #[prost(int32, tag = "3")]
    pub code: i32,
}

/// `STATUS_CODE_ERROR`.
pub(crate) const STATUS_CODE_ERROR: i32 = 2;

/// `KeyValue` (common/v1).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct KeyValue {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

/// `AnyValue` (common/v1): the scalar members of its `oneof value`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct AnyValue {
    #[prost(oneof = "any_value::Value", tags = "1, 2, 3, 4")]
    pub value: Option<any_value::Value>,
}

/// The `oneof` of [`AnyValue`].
pub(crate) mod any_value {
    /// `string_value` = 1, `bool_value` = 2, `int_value` = 3, `double_value` = 4 (the
    /// variants are named for what they hold; the wire knows only the tags).
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub(crate) enum Value {
        #[prost(string, tag = "1")]
        Str(String),
        #[prost(bool, tag = "2")]
        Bool(bool),
        #[prost(int64, tag = "3")]
        Int(i64),
        #[prost(double, tag = "4")]
        Double(f64),
    }
}

/// The W3C sampled flag: every exported span is sampled.
pub(crate) const FLAGS_SAMPLED: u32 = 0x01;

pub(crate) fn key_value(key: &str, value: &Value) -> KeyValue {
    use any_value::Value as V;
    let value = match value {
        Value::Str(s) => V::Str(s.clone()),
        Value::Int(i) => V::Int(*i),
        Value::Bool(b) => V::Bool(*b),
        Value::Float(f) => V::Double(*f),
    };
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(value) }),
    }
}

/// The resource of every export, from `(key, value)` string attributes.
pub(crate) fn resource(attributes: &[(String, String)]) -> Resource {
    Resource {
        attributes: attributes
            .iter()
            .map(|(k, v)| key_value(k, &Value::Str(v.clone())))
            .collect(),
    }
}

pub(crate) fn span(s: &SpanData) -> Span {
    Span {
        trace_id: s.trace_id.0.to_vec(),
        span_id: s.span_id.0.to_vec(),
        trace_state: s.trace_state.clone().unwrap_or_default(),
        parent_span_id: s.parent_span_id.map(|p| p.0.to_vec()).unwrap_or_default(),
        name: s.name.to_string(),
        kind: s.kind.otlp(),
        start_time_unix_nano: unix_nanos(s.start),
        end_time_unix_nano: unix_nanos(s.end),
        attributes: s.attributes.iter().map(|(k, v)| key_value(k, v)).collect(),
        links: s
            .links
            .iter()
            .map(|(t, sp)| Link {
                trace_id: t.0.to_vec(),
                span_id: sp.0.to_vec(),
                trace_state: String::new(),
                attributes: Vec::new(),
                flags: 0,
            })
            .collect(),
        status: s.error.as_ref().map(|message| Status {
            message: message.clone(),
            code: STATUS_CODE_ERROR,
        }),
        flags: FLAGS_SAMPLED,
    }
}

/// One request holding `spans` under one resource and the `sluice` scope.
pub(crate) fn request(resource: &Resource, spans: &[SpanData]) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(resource.clone()),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: crate::SCOPE_NAME.to_owned(),
                    version: env!("CARGO_PKG_VERSION").to_owned(),
                }),
                spans: spans.iter().map(span).collect(),
            }],
        }],
    }
}

/// The protobuf body of an export of `spans`.
pub(crate) fn encode(resource: &Resource, spans: &[SpanData]) -> Vec<u8> {
    request(resource, spans).encode_to_vec()
}
