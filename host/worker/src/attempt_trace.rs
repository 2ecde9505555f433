//! The span of one attempt (docs/observability.md): a child of the span its job was
//! enqueued under, so one trace covers enqueue → attempts → outbound requests →
//! follow-up jobs. Every attempt of a job is a sibling under that parent; a retry also
//! links to the attempt before it, whose span id it can name without storing anything
//! because attempt span ids are derived from (trace id, job id, attempt). A job enqueued
//! without a trace context (SQL without one, a schedule, the CLI without
//! `--traceparent`) gets a trace id derived from its id, so its attempts share a trace
//! too.
//!
//! Must not: export (the tracer does, off the claim loop) or decide the outcome (it
//! only records it).

use std::borrow::Cow;

use sluice_sandbox::AttemptTrace;
use sluice_store::{ClaimedJob, TraceHeaders};
use sluice_trace::{Span, SpanId, SpanKind, TraceContext, TraceId, Tracer};

/// An attempt's span and what its sandbox run continues.
pub(super) struct AttemptSpan {
    /// `None` when tracing is off and the job carries no context: nothing to record.
    span: Option<Span>,
    /// Handed to the sandbox (outbound requests, secret reads, follow-ups); `None` when
    /// tracing is off and the job carries no context: nothing is injected then.
    pub(super) sandbox: Option<AttemptTrace>,
}

/// The job's stored context, if it parses (the store checked its shape; a context
/// written by other means that does not parse starts a trace of the job's own).
pub(super) fn parent_of(trace: Option<&TraceHeaders>) -> Option<TraceContext> {
    let trace = trace?;
    TraceContext::parse(&trace.traceparent, trace.tracestate.as_deref()).ok()
}

impl AttemptSpan {
    /// Starts the span of `job`'s attempt (kind consumer), with the time it waited since
    /// it was due.
    pub(super) fn start(tracer: &Tracer, job: &ClaimedJob, name: &'static str) -> AttemptSpan {
        let parent = parent_of(job.trace.as_ref());
        if !tracer.is_enabled() && parent.is_none() {
            return AttemptSpan {
                span: None,
                sandbox: None,
            };
        }
        let trace_id = parent
            .as_ref()
            .map_or_else(|| TraceId::derive(&[job.id]), |p| p.trace_id);
        let attempt = i64::from(job.attempt);
        let span_name: Cow<'static, str> = if tracer.is_enabled() {
            format!("{name} {}", job.job_type).into()
        } else {
            name.into()
        };
        let waited = (chrono::Utc::now() - job.due_at).num_milliseconds().max(0);
        let mut builder = tracer
            .span(span_name, SpanKind::Consumer)
            .parent(parent.as_ref())
            .root_trace_id(trace_id)
            .span_id(SpanId::derive(trace_id, &[job.id, attempt]))
            .attr("messaging.system", "sluice")
            .attr("messaging.operation.type", "process")
            .attr("sluice.job.id", job.id)
            .attr("sluice.job.type", job.job_type.as_str())
            .attr("sluice.tenant", job.tenant.as_str())
            .attr("sluice.attempt", attempt)
            .attr("sluice.max_attempts", i64::from(job.max_attempts))
            .attr("sluice.wait_ms", waited);
        if attempt > 1 {
            builder = builder.link(trace_id, SpanId::derive(trace_id, &[job.id, attempt - 1]));
        }
        let span = builder.start();
        let sandbox = Some(AttemptTrace {
            tracer: tracer.clone(),
            context: span.context().clone(),
        });
        AttemptSpan {
            span: Some(span),
            sandbox,
        }
    }

    /// The context of the attempt (for a webhook delivery's `traceparent`).
    pub(super) fn context(&self) -> Option<&TraceContext> {
        self.sandbox.as_ref().map(|s| &s.context)
    }

    /// Whether the span records: what it would be given (an error's text) is worth
    /// computing only then.
    pub(super) fn is_recording(&self) -> bool {
        self.span.as_ref().is_some_and(Span::is_recording)
    }

    /// Ends the span with the attempt's outcome (`completed`, `retrying`, `dead`, …) and
    /// the fuel it used; an `error` marks the span failed.
    pub(super) fn end(self, outcome: &'static str, fuel: Option<u64>, error: Option<&str>) {
        let Some(mut span) = self.span.filter(Span::is_recording) else {
            return;
        };
        span.set("sluice.outcome", outcome);
        if let Some(fuel) = fuel {
            span.set("sluice.fuel", fuel);
        }
        if let Some(error) = error {
            span.error(error);
        }
        span.end();
    }
}
