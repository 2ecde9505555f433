//! The W3C trace context a job or event carries through the queue (`traceparent`,
//! `tracestate`; migration 0034, docs/observability.md), as the store keeps it: two
//! texts, checked for shape before they are written.
//!
//! Must not: make or continue spans (`sluice-trace` does, in the worker and the HTTP
//! API); the store only keeps what it is given.

use crate::StoreError;

/// A job's or event's trace context, as enqueued.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceHeaders {
    /// `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>` (W3C Trace Context).
    pub traceparent: String,
    /// Vendors' state, kept as given when it is well formed (otherwise dropped).
    pub tracestate: Option<String>,
}

impl TraceHeaders {
    /// Checks `traceparent` (the error names the problem) and keeps `tracestate` only if
    /// it is at most 512 characters of printable ASCII in at most 32 members: an invalid
    /// `tracestate` never refuses the job (W3C: a vendor must not fail on it).
    pub fn new(traceparent: &str, tracestate: Option<&str>) -> Result<Self, StoreError> {
        check_traceparent(traceparent)?;
        let tracestate = tracestate
            .filter(|s| {
                s.len() <= 512
                    && s.split(',').count() <= 32
                    && s.bytes().all(|b| (0x20..=0x7e).contains(&b) || b == b'\t')
                    && s.contains('=')
            })
            .map(str::to_owned);
        Ok(TraceHeaders {
            traceparent: traceparent.to_owned(),
            tracestate,
        })
    }
}

/// The rule `sluice.valid_traceparent` applies in SQL: version 00 exactly 55
/// characters, a later version (not `ff`) may append `-…`; lowercase hex; neither id all
/// zeros.
pub(crate) fn check_traceparent(value: &str) -> Result<(), StoreError> {
    let invalid = |why: &str| StoreError::InvalidInput {
        field: "traceparent",
        message: format!(
            "{:?} is not a W3C traceparent (00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>): {why}",
            value.chars().take(64).collect::<String>()
        ),
    };
    let hex = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let b = value.as_bytes();
    if b.len() < 55 || (b.len() > 55 && b[55] != b'-') || (b.len() > 55 && &value[..2] == "00") {
        return Err(invalid("wrong length"));
    }
    if b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
        return Err(invalid("fields are not separated by `-`"));
    }
    let (version, trace_id, parent_id, flags) =
        (&value[..2], &value[3..35], &value[36..52], &value[53..55]);
    if ![version, trace_id, parent_id, flags].iter().all(|f| hex(f)) {
        return Err(invalid("not lowercase hex"));
    }
    if version == "ff" {
        return Err(invalid("version ff is invalid"));
    }
    if trace_id.bytes().all(|b| b == b'0') || parent_id.bytes().all(|b| b == b'0') {
        return Err(invalid("an all-zero id"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn valid_traceparents_are_kept_with_a_well_formed_tracestate() {
        let t = TraceHeaders::new(VALID, Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")).unwrap();
        assert_eq!(t.traceparent, VALID);
        assert_eq!(
            t.tracestate.as_deref(),
            Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
        );
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes";
        assert!(TraceHeaders::new(later, None).is_ok());
        assert_eq!(
            TraceHeaders::new(VALID, Some("no\u{7}pe=1"))
                .unwrap()
                .tracestate,
            None
        );
        assert_eq!(
            TraceHeaders::new(VALID, Some(&"a=b,".repeat(40)))
                .unwrap()
                .tracestate,
            None
        );
    }

    #[test]
    fn malformed_traceparents_are_refused_by_name() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
        ] {
            let err = TraceHeaders::new(bad, None).unwrap_err();
            assert!(
                matches!(
                    &err,
                    StoreError::InvalidInput {
                        field: "traceparent",
                        ..
                    }
                ),
                "{bad}: {err}"
            );
        }
    }
}
