//! The samplers: parent-based decisions, ratios decided from the trace id alone.

use crate::TraceContext;
use crate::ids::{SpanId, TraceId};
use crate::sampler::{RootSampler, Sampler, ratio_sampled};

fn trace_with_low(low: u64) -> TraceId {
    let mut bytes = [0xab; 16];
    bytes[8..].copy_from_slice(&low.to_be_bytes());
    TraceId(bytes)
}

fn parent(sampled: bool) -> TraceContext {
    TraceContext {
        trace_id: trace_with_low(u64::MAX),
        span_id: SpanId([1; 8]),
        sampled,
        state: None,
    }
}

#[test]
fn the_ratio_compares_the_low_eight_bytes() {
    assert!(ratio_sampled(0.5, trace_with_low(0)));
    assert!(ratio_sampled(0.5, trace_with_low((1 << 63) - 1)));
    assert!(!ratio_sampled(0.5, trace_with_low(1 << 63)));
    assert!(!ratio_sampled(0.5, trace_with_low(u64::MAX)));
    assert!(ratio_sampled(1.0, trace_with_low(u64::MAX)));
    assert!(!ratio_sampled(0.0, trace_with_low(0)));
    // The high bytes play no part.
    let mut t = trace_with_low(1);
    t.0[0] = 0xff;
    assert!(ratio_sampled(1e-18, t));
}

#[test]
fn a_ratio_samples_about_that_share_of_random_traces() {
    let n = 20_000;
    let kept = (0..n)
        .filter(|_| ratio_sampled(0.25, TraceId::random()))
        .count();
    assert!((4_000..6_000).contains(&kept), "{kept} of {n}");
}

#[test]
fn parent_based_samplers_follow_the_parent() {
    let on = Sampler::default();
    assert!(on.sampled(None, trace_with_low(5)));
    assert!(on.sampled(Some(&parent(true)), trace_with_low(5)));
    assert!(!on.sampled(Some(&parent(false)), trace_with_low(5)));

    let off = Sampler {
        root: RootSampler::AlwaysOff,
        parent_based: true,
    };
    assert!(!off.sampled(None, trace_with_low(5)));
    assert!(off.sampled(Some(&parent(true)), trace_with_low(5)));

    let ratio = Sampler {
        root: RootSampler::Ratio(0.5),
        parent_based: true,
    };
    assert!(ratio.sampled(None, trace_with_low(0)));
    assert!(!ratio.sampled(None, trace_with_low(u64::MAX)));
    // The parent's trace id would not be sampled by the ratio; the parent's flag wins.
    assert!(ratio.sampled(Some(&parent(true)), trace_with_low(u64::MAX)));
}

#[test]
fn plain_samplers_ignore_the_parent() {
    let on = Sampler {
        root: RootSampler::AlwaysOn,
        parent_based: false,
    };
    assert!(on.sampled(Some(&parent(false)), trace_with_low(5)));
    let off = Sampler {
        root: RootSampler::AlwaysOff,
        parent_based: false,
    };
    assert!(!off.sampled(Some(&parent(true)), trace_with_low(5)));
    let ratio = Sampler {
        root: RootSampler::Ratio(0.5),
        parent_based: false,
    };
    assert!(!ratio.sampled(Some(&parent(true)), trace_with_low(u64::MAX)));
}
