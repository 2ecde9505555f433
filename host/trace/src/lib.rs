//! `sluice-trace`: OpenTelemetry tracing for Sluice — W3C Trace Context propagation
//! ([`TraceContext`]), spans ([`Tracer`], [`SpanBuilder`], [`Span`]), the standard
//! samplers, and a batch exporter speaking OTLP/HTTP (protobuf or JSON) configured by the
//! standard `OTEL_*` variables ([`Tracer::from_env`]).
//!
//! Must not: open a connection other than through `sluice_egress::Connector::send` (the
//! exporter has its own connector, every network open to the operator's collector and a
//! grant of exactly its origin); block or await in `Span::end`; grow memory past the
//! bounded queue (failed batches are dropped and counted, never retried); know anything
//! of jobs, SQL or wasmtime (the host names its spans and attributes).
//!
//! Modules import downward only, through these layers, top first (a module imports from
//! its own layer and those below, never in a circle; `tests` checks):
//! 1. `tests`: the crate's tests
//! 2. `tracer`: the API — tracer, span builder, span
//! 3. `export`: the bounded queue and the exporter task
//! 4. `config`, `json`, `proto`: the variables; the two encodings
//! 5. `parse`, `sampler`, `data`: one variable's value; sampling decisions; what a
//!    recorded span holds
//! 6. `context`: W3C Trace Context
//! 7. `ids`: trace and span ids

#![warn(missing_docs)]

mod config;
mod context;
mod data;
mod export;
mod ids;
mod json;
mod parse;
mod proto;
mod sampler;
#[cfg(test)]
mod tests;
mod tracer;

pub use context::{MAX_TRACESTATE_LEN, MAX_TRACESTATE_MEMBERS, TraceContext, TraceContextError};
pub use data::{SpanKind, Value};
pub use export::TraceStats;
pub use ids::{SpanId, TraceId};
pub use parse::TraceConfigError;
pub use tracer::{Span, SpanBuilder, Tracer};

/// The instrumentation scope of every span (`InstrumentationScope.name`).
pub const SCOPE_NAME: &str = "sluice";
