//! The process's OpenTelemetry tracer (docs/observability.md), from the standard
//! `OTEL_*` variables: off unless an OTLP endpoint is set. Built once by `sluice worker`
//! and `sluice serve`, flushed when they stop.
//!
//! Must not: make spans (the worker and the HTTP API do) or export (`sluice-trace` does).

use std::time::Duration;

use anyhow::Context;
use sluice_trace::Tracer;

/// How long a stopping process waits for its last spans to be exported.
const FLUSH: Duration = Duration::from_secs(5);

/// The tracer the `OTEL_*` variables describe, named `service` unless
/// `OTEL_SERVICE_NAME` says otherwise. A variable that does not parse is an error that
/// names it (the process does not start half-configured).
pub fn from_env(service: &str) -> anyhow::Result<Tracer> {
    let tracer = Tracer::from_env(service).context("OpenTelemetry configuration")?;
    if tracer.is_enabled() {
        tracing::info!("exporting traces over OTLP (OTEL_EXPORTER_OTLP_*)");
    }
    Ok(tracer)
}

/// Exports what is still queued, for at most a few seconds.
pub async fn flush(tracer: &Tracer) {
    if tracer.is_enabled() {
        tracer.shutdown(FLUSH).await;
        let stats = tracer.stats();
        tracing::info!(
            exported = stats.exported_spans,
            dropped = stats.dropped_spans,
            "trace export stopped"
        );
    }
}
