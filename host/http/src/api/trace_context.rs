//! W3C trace context at the API's enqueue routes (`POST /v1/jobs`, `POST /v1/jobs:batch`,
//! `POST /v1/events`; docs/observability.md): the request's `traceparent` and
//! `tracestate` headers, the enqueue span made under them when this process traces, and
//! the context stored with the jobs or event so their attempts continue the trace.
//!
//! A malformed `traceparent` is ignored, as W3C Trace Context asks of a receiver (the
//! job starts a trace of its own): tracing headers are set by middleware, and a job must
//! not be refused for one. Must not: touch the store (handlers pass the context on).

use std::borrow::Cow;

use axum::extract::FromRequestParts;
use axum::http::HeaderMap;
use axum::http::request::Parts;
use sluice_store::TraceHeaders;
use sluice_trace::{Span, SpanKind, TraceContext, Tracer};

/// The enqueue routes' optional trace headers, as the OpenAPI document lists them (the
/// handlers read them through [`IncomingTrace`]).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)] // only its derived parameters are used
pub struct TraceHeaderParams {
    /// W3C Trace Context `traceparent` (`00-<32 hex trace id>-<16 hex parent id>-<2 hex
    /// flags>`): the jobs (an event's deliveries) join the caller's trace. A malformed
    /// one is ignored, never an error (they then start a trace of their own).
    traceparent: Option<String>,
    /// W3C `tracestate`, kept with the `traceparent` when well formed (otherwise
    /// dropped).
    tracestate: Option<String>,
}

/// The trace context a request came with (`None`: no `traceparent`, or a malformed one).
pub struct IncomingTrace(pub Option<TraceContext>);

impl<S: Send + Sync> FromRequestParts<S> for IncomingTrace {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(IncomingTrace(parse(&parts.headers)))
    }
}

/// The `traceparent` of `headers` (exactly one), with every `tracestate` line joined.
fn parse(headers: &HeaderMap) -> Option<TraceContext> {
    let mut parents = headers.get_all("traceparent").iter();
    let parent = parents.next()?.to_str().ok()?;
    if parents.next().is_some() {
        return None;
    }
    let states: Vec<&str> = headers
        .get_all("tracestate")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    let state = (!states.is_empty()).then(|| states.join(","));
    TraceContext::parse(parent.trim(), state.as_deref()).ok()
}

/// One enqueue request's span (kind producer) and the context its jobs keep.
pub struct EnqueueTrace {
    /// `None` when this process does not trace (nothing to record).
    span: Option<Span>,
    /// What the jobs or event store: the span's context when this process traces, else
    /// the incoming one as it came (so a worker that traces continues it), else none.
    pub stored: Option<TraceHeaders>,
}

impl IncomingTrace {
    /// Starts the enqueue span of a request to `route` (named `name`, made only when it
    /// is recorded).
    pub fn enqueue(
        self,
        tracer: &Tracer,
        route: &'static str,
        name: impl FnOnce() -> String,
    ) -> EnqueueTrace {
        let incoming = self.0;
        if !tracer.is_enabled() {
            let stored = incoming.as_ref().map(|context| TraceHeaders {
                traceparent: context.traceparent(),
                tracestate: context.state.clone(),
            });
            return EnqueueTrace { span: None, stored };
        }
        let span = tracer
            .span(Cow::Owned(name()), SpanKind::Producer)
            .parent(incoming.as_ref())
            .attr("messaging.system", "sluice")
            .attr("messaging.operation.type", "send")
            .attr("http.request.method", "POST")
            .attr("http.route", route)
            .start();
        let context = span.context();
        let stored = Some(TraceHeaders {
            traceparent: context.traceparent(),
            tracestate: context.state.clone(),
        });
        EnqueueTrace {
            span: Some(span),
            stored,
        }
    }
}

impl EnqueueTrace {
    /// Ends the span: the tenant, what was created (job ids or the event's), or the
    /// error status of the answer.
    pub fn end(self, tenant: &str, outcome: Result<&[i64], u16>) {
        let Some(mut span) = self.span.filter(Span::is_recording) else {
            return;
        };
        span.set("sluice.tenant", tenant);
        match outcome {
            Ok([]) => {}
            Ok([id]) => span.set("sluice.job.id", *id),
            Ok(ids) => span.set("sluice.jobs", ids.len()),
            Err(status) => {
                span.set("http.response.status_code", i64::from(status));
                span.error(format!("answered {status}"));
            }
        }
        span.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, value.parse().unwrap());
        }
        map
    }

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_is_read_with_every_tracestate_line() {
        let ctx = parse(&headers(&[
            ("traceparent", PARENT),
            ("tracestate", "a=1"),
            ("tracestate", "b=2"),
        ]))
        .unwrap();
        assert_eq!(ctx.traceparent(), PARENT);
        assert_eq!(ctx.state.as_deref(), Some("a=1,b=2"));
    }

    #[test]
    fn malformed_or_repeated_traceparents_are_ignored() {
        assert!(parse(&headers(&[("traceparent", "00-nope")])).is_none());
        assert!(
            parse(&headers(&[
                ("traceparent", PARENT),
                ("traceparent", PARENT)
            ]))
            .is_none()
        );
        assert!(parse(&headers(&[])).is_none());
    }

    #[test]
    fn without_a_tracer_the_incoming_context_is_stored_as_it_came() {
        let incoming = IncomingTrace(parse(&headers(&[("traceparent", PARENT)])));
        let trace = incoming.enqueue(&Tracer::disabled(), "/v1/jobs", || unreachable!());
        assert_eq!(trace.stored.unwrap().traceparent, PARENT);
        let none = IncomingTrace(None).enqueue(&Tracer::disabled(), "/v1/jobs", || unreachable!());
        assert!(none.stored.is_none());
    }
}
