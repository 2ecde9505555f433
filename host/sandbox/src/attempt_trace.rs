//! The trace an attempt continues (docs/observability.md): the tracer and the attempt
//! span's context, handed in by the worker with the job. Capabilities make child spans
//! of it (an outbound request, a secret read, a follow-up enqueue) and the HTTP
//! capability injects it into the guest's outbound requests as `traceparent`.
//!
//! Must not: export or decide sampling (`sluice-trace` does); spans carry no payloads,
//! secret values, URLs' paths or queries.

use std::borrow::Cow;

use sluice_trace::{Span, SpanKind, TraceContext, Tracer};

/// The trace of one attempt.
#[derive(Clone, Debug)]
pub struct AttemptTrace {
    /// Where spans go (disabled: none are recorded, the context still propagates).
    pub tracer: Tracer,
    /// The attempt span's context: the parent of every span the run makes.
    pub context: TraceContext,
}

/// Two traces are the same when they continue the same context (a tracer has no
/// identity to compare).
impl PartialEq for AttemptTrace {
    fn eq(&self, other: &Self) -> bool {
        self.context == other.context
    }
}

impl Eq for AttemptTrace {}

impl AttemptTrace {
    /// Starts a child span of the attempt; `name` is only made when it is recorded.
    pub(crate) fn child(&self, kind: SpanKind, name: impl FnOnce() -> Cow<'static, str>) -> Span {
        let name = if self.tracer.is_enabled() {
            name()
        } else {
            Cow::Borrowed("")
        };
        self.tracer
            .span(name, kind)
            .parent(Some(&self.context))
            .start()
    }
}
