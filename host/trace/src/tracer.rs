//! The tracing API the host uses: [`Tracer`] (configured from the environment, or
//! disabled), [`SpanBuilder`] and [`Span`]. A span decides at its start whether it is
//! recorded (the sampler) and, when it is, hands itself to the exporter at its end.
//!
//! Must not: block, await or allocate beyond the context when the tracer is disabled or
//! the span is not sampled; or make a span's context depend on whether it is recorded
//! (a context always propagates: the parent's child, or a fresh root).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::config::{Config, TraceConfigError};
use crate::context::TraceContext;
use crate::data::{SpanData, SpanKind, Value, set_attribute};
use crate::export::{Exporter, TraceStats};
use crate::ids::{SpanId, TraceId};
use crate::sampler::Sampler;

/// Starts spans and exports the sampled ones. Cheap to clone; `Send + Sync`.
#[derive(Clone)]
pub struct Tracer {
    inner: Option<Arc<Inner>>,
}

struct Inner {
    sampler: Sampler,
    exporter: Exporter,
}

impl std::fmt::Debug for Tracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracer")
            .field("enabled", &self.is_enabled())
            .finish_non_exhaustive()
    }
}

impl Tracer {
    /// Records nothing, exports nothing; contexts still propagate.
    pub fn disabled() -> Self {
        Self { inner: None }
    }

    /// Whether spans may be recorded and exported.
    pub fn is_enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// Reads the standard variables; Ok(disabled) when no endpoint is set or
    /// OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none. Spawns the exporter task on
    /// the current tokio runtime. `default_service` is used when OTEL_SERVICE_NAME and
    /// OTEL_RESOURCE_ATTRIBUTES' service.name are unset.
    pub fn from_env(default_service: &str) -> Result<Self, TraceConfigError> {
        Self::from_vars(default_service, |name| std::env::var(name).ok())
    }

    /// Same, from an explicit lookup (tests pass a closure/map instead of the process env).
    pub fn from_vars(
        default_service: &str,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, TraceConfigError> {
        let Some(config) = Config::from_vars(default_service, var)? else {
            return Ok(Self::disabled());
        };
        let exporter = Exporter::start(&config)?;
        Ok(Self {
            inner: Some(Arc::new(Inner {
                sampler: config.sampler,
                exporter,
            })),
        })
    }

    /// Prepares a span; nothing happens until [`SpanBuilder::start`].
    pub fn span(&self, name: impl Into<Cow<'static, str>>, kind: SpanKind) -> SpanBuilder {
        SpanBuilder {
            inner: self.inner.clone(),
            name: name.into(),
            kind,
            parent: None,
            span_id: None,
            root_trace_id: None,
            start: None,
            links: Vec::new(),
            attributes: Vec::new(),
        }
    }

    /// What the exporter has done so far (all zero when disabled).
    pub fn stats(&self) -> TraceStats {
        self.inner
            .as_ref()
            .map_or_else(TraceStats::default, |i| i.exporter.stats())
    }

    /// Flush what is queued, waiting at most `timeout`; later spans are dropped.
    pub async fn shutdown(&self, timeout: Duration) {
        if let Some(inner) = &self.inner {
            inner.exporter.shutdown(timeout).await;
        }
    }
}

/// A span being prepared ([`Tracer::span`]).
pub struct SpanBuilder {
    inner: Option<Arc<Inner>>,
    name: Cow<'static, str>,
    kind: SpanKind,
    parent: Option<TraceContext>,
    span_id: Option<SpanId>,
    root_trace_id: Option<TraceId>,
    start: Option<SystemTime>,
    links: Vec<(TraceId, SpanId)>,
    attributes: Vec<(&'static str, Value)>,
}

impl SpanBuilder {
    /// The new span is its child (same trace, parent's sampled flag under parent-based
    /// samplers). `None` leaves it a root.
    pub fn parent(mut self, parent: Option<&TraceContext>) -> Self {
        self.parent = parent.cloned();
        self
    }

    /// Use this id instead of a random one.
    pub fn span_id(mut self, id: SpanId) -> Self {
        self.span_id = Some(id);
        self
    }

    /// When there is no parent, start this trace instead of a random one.
    pub fn root_trace_id(mut self, id: TraceId) -> Self {
        self.root_trace_id = Some(id);
        self
    }

    /// When the span started (default: when [`SpanBuilder::start`] is called).
    pub fn start_time(mut self, t: SystemTime) -> Self {
        self.start = Some(t);
        self
    }

    /// Links the span to another one (e.g. the previous attempt of a job).
    pub fn link(mut self, trace_id: TraceId, span_id: SpanId) -> Self {
        if self.inner.is_some() {
            self.links.push((trace_id, span_id));
        }
        self
    }

    /// Sets an attribute (a later value of the same key replaces the earlier one).
    pub fn attr(mut self, key: &'static str, value: impl Into<Value>) -> Self {
        if self.inner.is_some() {
            set_attribute(&mut self.attributes, key, value.into());
        }
        self
    }

    /// Starts the span: decides its context and whether it is recorded.
    pub fn start(self) -> Span {
        let span_id = self.span_id.unwrap_or_else(SpanId::random);
        let trace_id = match &self.parent {
            Some(p) => p.trace_id,
            None => self.root_trace_id.unwrap_or_else(TraceId::random),
        };
        let sampled = match &self.inner {
            Some(inner) => inner.sampler.sampled(self.parent.as_ref(), trace_id),
            None => self.parent.as_ref().is_some_and(|p| p.sampled),
        };
        let (parent_span_id, state) = match self.parent {
            Some(p) => (Some(p.span_id), p.state),
            None => (None, None),
        };
        let context = TraceContext {
            trace_id,
            span_id,
            sampled,
            state,
        };
        let recording = match self.inner {
            Some(inner) if sampled => Some(Recording {
                inner,
                name: self.name,
                kind: self.kind,
                parent_span_id,
                start: self.start.unwrap_or_else(SystemTime::now),
                attributes: self.attributes,
                links: self.links,
                error: None,
            }),
            _ => None,
        };
        Span { context, recording }
    }
}

/// A started span. Ends (and is queued for export, when recorded) at [`Span::end`],
/// [`Span::end_at`], or when dropped — so a panic or an early return still exports it.
pub struct Span {
    context: TraceContext,
    recording: Option<Recording>,
}

struct Recording {
    inner: Arc<Inner>,
    name: Cow<'static, str>,
    kind: SpanKind,
    parent_span_id: Option<SpanId>,
    start: SystemTime,
    attributes: Vec<(&'static str, Value)>,
    links: Vec<(TraceId, SpanId)>,
    error: Option<String>,
}

impl std::fmt::Debug for Span {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Span")
            .field("context", &self.context)
            .field("recording", &self.is_recording())
            .finish_non_exhaustive()
    }
}

impl Span {
    /// Always valid, even when not recording (tracer disabled or not sampled): a child of
    /// the parent with this span's id, or a fresh root context; so callers can always
    /// propagate it.
    pub fn context(&self) -> &TraceContext {
        &self.context
    }

    /// Whether the span is sampled and will be exported.
    pub fn is_recording(&self) -> bool {
        self.recording.is_some()
    }

    /// Sets an attribute (a later value of the same key replaces the earlier one).
    pub fn set(&mut self, key: &'static str, value: impl Into<Value>) {
        if let Some(r) = &mut self.recording {
            set_attribute(&mut r.attributes, key, value.into());
        }
    }

    /// Status ERROR with the message.
    pub fn error(&mut self, message: impl Into<String>) {
        if let Some(r) = &mut self.recording {
            r.error = Some(message.into());
        }
    }

    /// End now and queue it.
    pub fn end(mut self) {
        self.finish(None);
    }

    /// End at `t` (not before the start) and queue it.
    pub fn end_at(mut self, t: SystemTime) {
        self.finish(Some(t));
    }

    fn finish(&mut self, end: Option<SystemTime>) {
        let Some(r) = self.recording.take() else {
            return;
        };
        let end = end.unwrap_or_else(SystemTime::now).max(r.start);
        r.inner.exporter.submit(SpanData {
            name: r.name,
            kind: r.kind,
            trace_id: self.context.trace_id,
            span_id: self.context.span_id,
            parent_span_id: r.parent_span_id,
            trace_state: self.context.state.clone(),
            start: r.start,
            end,
            attributes: r.attributes,
            links: r.links,
            error: r.error,
        });
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        self.finish(None);
    }
}
