//! The span of one outbound request (kind client, named by its method) and the W3C
//! trace context the host injects into it (`traceparent`, `tracestate`), so the API a
//! task calls continues the job's trace with no guest code. A `traceparent` the guest
//! set itself is left as it is (it propagates its own context).
//!
//! Must not: record a path, query or header value (they may carry tokens): a span names
//! the scheme, host and port only.

use std::borrow::Cow;

use http::HeaderValue;
use sluice_trace::{Span, SpanKind, TraceContext};

use crate::attempt_trace::AttemptTrace;

/// Starts the span of a request to `uri` and injects its context into `headers`.
pub(super) fn start(
    trace: &AttemptTrace,
    method: &http::Method,
    uri: &http::Uri,
    headers: &mut http::HeaderMap,
) -> Span {
    let mut span = trace.child(SpanKind::Client, || Cow::Owned(method.as_str().to_owned()));
    if span.is_recording() {
        span.set("http.request.method", method.as_str());
        if let Some(scheme) = uri.scheme_str() {
            span.set("url.scheme", scheme);
        }
        if let Some(host) = uri.host() {
            span.set("server.address", host);
        }
        if let Some(port) = uri.port_u16() {
            span.set("server.port", i64::from(port));
        }
    }
    inject(headers, span.context());
    span
}

/// Sets `traceparent` (and `tracestate`) unless the guest set a `traceparent`.
pub(super) fn inject(headers: &mut http::HeaderMap, context: &TraceContext) {
    if headers.contains_key("traceparent") {
        return;
    }
    if let Ok(value) = HeaderValue::from_str(&context.traceparent()) {
        headers.insert("traceparent", value);
    }
    if let Some(state) = &context.state
        && let Ok(value) = HeaderValue::from_str(state)
    {
        headers.insert("tracestate", value);
    }
}

/// Ends the span with the response's status (an error status from 500 up, as OTel's
/// client convention says) or the request's error.
pub(super) fn end(mut span: Span, result: Result<u16, &str>) {
    if !span.is_recording() {
        return;
    }
    match result {
        Ok(status) => {
            span.set("http.response.status_code", i64::from(status));
            if status >= 500 {
                span.error(status.to_string());
            }
        }
        Err(error) => span.error(error),
    }
    span.end();
}
