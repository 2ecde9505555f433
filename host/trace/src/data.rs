//! What a recorded span is made of: its kind, attribute values, and the finished span
//! ([`SpanData`]) the exporter encodes.
//!
//! Must not: encode, sample or send anything; it is vocabulary only.

use std::borrow::Cow;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::ids::{SpanId, TraceId};

/// The role of a span (OTLP `SpanKind`, numbered as in `trace.proto`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpanKind {
    /// An operation inside the process.
    Internal,
    /// Handling a request from a remote caller.
    Server,
    /// A request to a remote service.
    Client,
    /// Handing work to a queue (enqueueing a job).
    Producer,
    /// Taking work from a queue (running a job).
    Consumer,
}

impl SpanKind {
    /// The OTLP enum value (`SPAN_KIND_INTERNAL` = 1 ... `SPAN_KIND_CONSUMER` = 5).
    pub fn otlp(self) -> i32 {
        match self {
            SpanKind::Internal => 1,
            SpanKind::Server => 2,
            SpanKind::Client => 3,
            SpanKind::Producer => 4,
            SpanKind::Consumer => 5,
        }
    }
}

/// An attribute value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A string.
    Str(String),
    /// A signed 64-bit integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A double.
    Float(f64),
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Str(v.to_owned())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Str(v)
    }
}

impl From<&String> for Value {
    fn from(v: &String) -> Self {
        Value::Str(v.clone())
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}

impl From<i32> for Value {
    fn from(v: i32) -> Self {
        Value::Int(v.into())
    }
}

impl From<u32> for Value {
    fn from(v: u32) -> Self {
        Value::Int(v.into())
    }
}

/// Saturates at `i64::MAX`.
impl From<u64> for Value {
    fn from(v: u64) -> Self {
        Value::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}

/// Saturates at `i64::MAX`.
impl From<usize> for Value {
    fn from(v: usize) -> Self {
        Value::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(v)
    }
}

/// A finished, sampled span, as queued for export.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SpanData {
    pub name: Cow<'static, str>,
    pub kind: SpanKind,
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub parent_span_id: Option<SpanId>,
    pub trace_state: Option<String>,
    pub start: SystemTime,
    pub end: SystemTime,
    /// Keys are unique (a later value replaced an earlier one).
    pub attributes: Vec<(&'static str, Value)>,
    pub links: Vec<(TraceId, SpanId)>,
    /// `Some(message)`: status ERROR with that message; `None`: status unset.
    pub error: Option<String>,
}

/// Sets `key` to `value`, replacing an earlier value of the same key (OTLP keys are unique).
pub(crate) fn set_attribute(
    attrs: &mut Vec<(&'static str, Value)>,
    key: &'static str,
    value: Value,
) {
    match attrs.iter_mut().find(|(k, _)| *k == key) {
        Some(slot) => slot.1 = value,
        None => attrs.push((key, value)),
    }
}

/// Nanoseconds since the Unix epoch (0 before it, saturating far after it).
pub(crate) fn unix_nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
