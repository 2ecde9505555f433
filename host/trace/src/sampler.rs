//! The samplers of `OTEL_TRACES_SAMPLER`: whether a new span is recorded, from its parent
//! context and its trace id only.
//!
//! Must not: look at attributes, names or the clock (a decision is a pure function of the
//! parent and the trace id, so every process of a trace decides alike), or read the
//! environment (the config module parses the variables).

use crate::context::TraceContext;
use crate::ids::TraceId;

/// What decides spans that have no parent (or every span, when not parent-based).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum RootSampler {
    AlwaysOn,
    AlwaysOff,
    /// `traceidratio` with this ratio, in `[0, 1]`.
    Ratio(f64),
}

/// A sampler: a root sampler, parent-based or not.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Sampler {
    pub root: RootSampler,
    /// `parentbased_*`: a span with a parent follows the parent's sampled flag.
    pub parent_based: bool,
}

impl Default for Sampler {
    /// `parentbased_always_on`, the OpenTelemetry default.
    fn default() -> Self {
        Self {
            root: RootSampler::AlwaysOn,
            parent_based: true,
        }
    }
}

impl Sampler {
    /// Whether a span of `trace_id` under `parent` is sampled.
    pub fn sampled(&self, parent: Option<&TraceContext>, trace_id: TraceId) -> bool {
        if self.parent_based
            && let Some(parent) = parent
        {
            return parent.sampled;
        }
        match self.root {
            RootSampler::AlwaysOn => true,
            RootSampler::AlwaysOff => false,
            RootSampler::Ratio(ratio) => ratio_sampled(ratio, trace_id),
        }
    }
}

/// The spec's `TraceIdRatioBased`: the low 8 bytes of the trace id, as a big-endian u64,
/// below `ratio * 2^64`.
pub(crate) fn ratio_sampled(ratio: f64, trace_id: TraceId) -> bool {
    if ratio >= 1.0 {
        return true;
    }
    if ratio.is_nan() || ratio <= 0.0 {
        return false;
    }
    let mut low = [0u8; 8];
    low.copy_from_slice(&trace_id.0[8..]);
    // `as` saturates; ratio < 1 keeps the product below 2^64.
    let threshold = (ratio * 18_446_744_073_709_551_616.0) as u64;
    u64::from_be_bytes(low) < threshold
}
