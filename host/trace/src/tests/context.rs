//! W3C Trace Context: `traceparent` parsing and printing, `tracestate` kept or dropped.

use crate::{SpanId, TraceContext, TraceContextError, TraceId};

const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn a_valid_traceparent_parses() {
    let c = TraceContext::parse(VALID, None).unwrap();
    assert_eq!(c.trace_id.to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(c.span_id.to_string(), "00f067aa0ba902b7");
    assert!(c.sampled);
    assert_eq!(c.state, None);
    let unsampled = TraceContext::parse(&VALID.replace("-01", "-00"), None).unwrap();
    assert!(!unsampled.sampled);
    // Other flag bits (level 2's random flag) do not make it sampled.
    let random_only = TraceContext::parse(&VALID.replace("-01", "-02"), None).unwrap();
    assert!(!random_only.sampled);
    let both = TraceContext::parse(&VALID.replace("-01", "-03"), None).unwrap();
    assert!(both.sampled);
}

#[test]
fn it_round_trips() {
    let c = TraceContext::parse(VALID, Some("congo=t61rcWkgMzE")).unwrap();
    assert_eq!(c.traceparent(), VALID);
    let again = TraceContext::parse(&c.traceparent(), c.state.as_deref()).unwrap();
    assert_eq!(again, c);
    let unsampled = TraceContext {
        sampled: false,
        ..c.clone()
    };
    assert!(unsampled.traceparent().ends_with("-00"));
    assert_eq!(unsampled.traceparent().len(), 55);
}

#[test]
fn uppercase_hex_is_refused() {
    let upper = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01";
    let err = TraceContext::parse(upper, None).unwrap_err();
    assert!(matches!(err, TraceContextError::Malformed(_)), "{err}");
    assert_eq!(
        err.to_string(),
        format!(
            "traceparent `{upper}` is not `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`"
        )
    );
    assert!(TraceContext::parse(&VALID.replace("-01", "-0A"), None).is_err());
    assert!(TraceContext::parse(&VALID.replacen("00", "0A", 1), None).is_err());
}

#[test]
fn wrong_lengths_and_separators_are_refused() {
    for bad in [
        "",
        "00",
        &VALID[..54],
        &format!("{VALID}0"),
        &format!("{VALID}-extra"),
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e47360-0f067aa0ba902b7-01",
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01",
        "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
    ] {
        let err = TraceContext::parse(bad, None).unwrap_err();
        assert!(
            matches!(err, TraceContextError::Malformed(_)),
            "{bad}: {err}"
        );
    }
    // A long header is quoted cut.
    let long = "x".repeat(1000);
    let message = TraceContext::parse(&long, None).unwrap_err().to_string();
    assert!(message.len() < 200, "{message}");
}

#[test]
fn all_zero_ids_are_refused() {
    let zero_trace = "00-00000000000000000000000000000000-00f067aa0ba902b7-01";
    let err = TraceContext::parse(zero_trace, None).unwrap_err();
    assert_eq!(err, TraceContextError::ZeroTraceId);
    assert_eq!(err.to_string(), "traceparent has an all-zero trace id");
    let zero_span = "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01";
    let err = TraceContext::parse(zero_span, None).unwrap_err();
    assert_eq!(err, TraceContextError::ZeroParentId);
    assert_eq!(err.to_string(), "traceparent has an all-zero parent id");
}

#[test]
fn version_ff_is_refused() {
    let ff = VALID.replacen("00", "ff", 1);
    assert_eq!(
        TraceContext::parse(&ff, None).unwrap_err(),
        TraceContextError::VersionFf
    );
}

#[test]
fn a_future_version_parses_its_first_four_fields() {
    let exact = VALID.replacen("00", "cc", 1);
    let c = TraceContext::parse(&exact, None).unwrap();
    assert_eq!(c.span_id.to_string(), "00f067aa0ba902b7");
    let extra = format!("{exact}-what-the-future-holds");
    let c = TraceContext::parse(&extra, None).unwrap();
    assert_eq!(c.trace_id.to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert!(c.sampled);
    // We answer in the version we speak.
    assert_eq!(c.traceparent(), VALID);
    // What follows the flags must start with `-`.
    assert!(TraceContext::parse(&format!("{exact}x"), None).is_err());
}

#[test]
fn surrounding_whitespace_is_tolerated() {
    assert!(TraceContext::parse(&format!("  {VALID}\t"), None).is_ok());
}

#[test]
fn a_valid_tracestate_is_kept() {
    let c = TraceContext::parse(VALID, Some("rojo=00f067aa0ba902b7, congo=t61rcWkgMzE"));
    assert_eq!(
        c.unwrap().state.as_deref(),
        Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
    );
    let tenant = TraceContext::parse(VALID, Some("fw529a3039@dt=FFFF,,vendor/x_1*=a b")).unwrap();
    assert_eq!(
        tenant.state.as_deref(),
        Some("fw529a3039@dt=FFFF,vendor/x_1*=a b")
    );
    let members: Vec<String> = (0..32).map(|i| format!("k{i}=v")).collect();
    let max = TraceContext::parse(VALID, Some(&members.join(","))).unwrap();
    assert_eq!(max.state.as_deref(), Some(members.join(",").as_str()));
}

#[test]
fn an_invalid_tracestate_is_dropped_and_the_traceparent_still_parses() {
    let too_many: Vec<String> = (0..33).map(|i| format!("k{i}=v")).collect();
    let too_long = format!("a={},b={}", "x".repeat(256), "y".repeat(256));
    for bad in [
        "",
        " , ",
        "novalue",
        "Upper=1",
        "1key=v",
        "k=",
        "k=a,k=b",
        "k=v=w",
        "k=a\tb",
        "k=\u{e9}",
        "tenant@system_that_is_too_long=v",
        too_many.join(",").as_str(),
        too_long.as_str(),
    ] {
        let c = TraceContext::parse(VALID, Some(bad)).unwrap();
        assert_eq!(c.state, None, "{bad:?}");
    }
}

#[test]
fn a_child_keeps_the_trace_flags_and_state() {
    let c = TraceContext::parse(VALID, Some("k=v")).unwrap();
    let child = c.child(SpanId([9; 8]));
    assert_eq!(child.trace_id, c.trace_id);
    assert_eq!(child.span_id, SpanId([9; 8]));
    assert_eq!(child.sampled, c.sampled);
    assert_eq!(child.state, c.state);
    assert_eq!(TraceId::from_hex(&c.trace_id.to_string()), Some(c.trace_id));
}
