//! The trace exporter's counts as metrics: the tracer counts what it exported and
//! dropped; each scrape adds what changed since the last one to the three
//! `sluice_trace_*` counters.
//!
//! Must not: export or make spans (`sluice-trace` does).

use std::sync::{Mutex, OnceLock};

use sluice_trace::{TraceStats, Tracer};

use super::Metrics;

/// The watched tracer and the counts already added.
#[derive(Default)]
pub(super) struct Watched {
    tracer: OnceLock<Tracer>,
    seen: Mutex<TraceStats>,
}

impl Metrics {
    /// Reports `tracer`'s export counts at each scrape (the first tracer given is kept;
    /// a disabled one reports nothing).
    pub fn watch_tracer(&self, tracer: &Tracer) {
        if tracer.is_enabled() {
            let _ = self.inner.traces.tracer.set(tracer.clone());
        }
    }

    pub(super) fn read_trace_counts(&self) {
        let Some(tracer) = self.inner.traces.tracer.get() else {
            return;
        };
        let now = tracer.stats();
        let mut seen = self.inner.traces.seen.lock().expect("trace counts lock");
        let f = self.f();
        f.trace_spans_exported
            .inc_by(now.exported_spans.saturating_sub(seen.exported_spans));
        f.trace_spans_dropped
            .inc_by(now.dropped_spans.saturating_sub(seen.dropped_spans));
        f.trace_exports_failed
            .inc_by(now.failed_exports.saturating_sub(seen.failed_exports));
        *seen = now;
    }
}
