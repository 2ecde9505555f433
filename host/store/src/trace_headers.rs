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
    /// `sluice.valid_tracestate` would (`kept_tracestate`): an invalid `tracestate` never
    /// refuses the job (W3C: a vendor must not fail on it).
    pub fn new(traceparent: &str, tracestate: Option<&str>) -> Result<Self, StoreError> {
        check_traceparent(traceparent)?;
        Ok(TraceHeaders {
            traceparent: traceparent.to_owned(),
            tracestate: tracestate.filter(|s| kept_tracestate(s)).map(str::to_owned),
        })
    }
}

/// The rule `sluice.valid_tracestate` applies in SQL (migration 0034), so that a context
/// keeps the same `tracestate` whichever way it is enqueued: at most 512 characters and
/// 32 comma-separated elements; list members `key=value` separated by `,` with optional
/// spaces or tabs around it, the first one present, later ones possibly empty; a key of
/// `[a-z0-9*/@_-]`, a value of printable ASCII other than `,` and `=`, not ending in a
/// space. (The worker's `TraceContext::parse` is stricter, W3C's key grammar and no key
/// twice: what it does not accept it drops when it continues the trace.)
fn kept_tracestate(value: &str) -> bool {
    let member = |m: &str| {
        let Some((key, value)) = m.split_once('=') else {
            return false;
        };
        !key.is_empty()
            && key
                .bytes()
                .all(|c| matches!(c, b'a'..=b'z' | b'0'..=b'9' | b'*' | b'/' | b'@' | b'_' | b'-'))
            && value
                .bytes()
                .all(|c| (0x20..=0x7e).contains(&c) && c != b'=')
            && value.bytes().last().is_some_and(|c| c != b' ')
    };
    let mut elements = value.split(',').map(|e| e.trim_matches([' ', '\t']));
    value.chars().count() <= 512
        && value.split(',').count() <= 32
        && elements.next().is_some_and(member)
        && elements.all(|e| e.is_empty() || member(e))
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
