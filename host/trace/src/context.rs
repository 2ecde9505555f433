//! W3C Trace Context (level 2): parsing and printing `traceparent`, keeping a valid
//! `tracestate`, and deriving a child context.
//!
//! Must not: sample, record or export (a context only travels), or fail a `traceparent`
//! because its `tracestate` is invalid (that one is dropped instead).

use crate::ids::{SpanId, TraceId, decode_lower_hex};

/// Where a span sits in a trace, as it travels between processes (`traceparent`,
/// `tracestate`) and between spans of this process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceContext {
    /// The trace every span of this context belongs to.
    pub trace_id: TraceId,
    /// The span this context points at (the parent of a span started from it).
    pub span_id: SpanId,
    /// The sampled flag: whether the caller records this trace.
    pub sampled: bool,
    /// A valid `tracestate` (list members joined with `,`), carried along unchanged.
    pub state: Option<String>,
}

/// A `traceparent` that cannot be used. The message names the problem.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum TraceContextError {
    /// Not `version-traceid-parentid-flags` with the lengths, separators and lowercase
    /// hex digits the version requires (the header is quoted, cut at 64 characters).
    #[error("traceparent `{0}` is not `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`")]
    Malformed(String),
    /// Version `ff` is forbidden.
    #[error("traceparent version `ff` is invalid")]
    VersionFf,
    /// The trace id is all zeros.
    #[error("traceparent has an all-zero trace id")]
    ZeroTraceId,
    /// The parent (span) id is all zeros.
    #[error("traceparent has an all-zero parent id")]
    ZeroParentId,
}

/// The longest `tracestate` kept (W3C: at least 512 characters must be propagated).
pub const MAX_TRACESTATE_LEN: usize = 512;
/// The most list members a kept `tracestate` has.
pub const MAX_TRACESTATE_MEMBERS: usize = 32;

impl TraceContext {
    /// W3C Trace Context (level 2): `traceparent` version 00 must be exactly 55 chars
    /// `00-<32 hex>-<16 hex>-<2 hex>` lowercase; a higher version (not `ff`) parses its first
    /// four fields and ignores what follows a `-`; all-zero trace or span id invalid;
    /// `tracestate` is kept only if it is valid (list members `key=value`, at most 32, at
    /// most 512 chars; otherwise dropped to None — an invalid tracestate never makes the
    /// traceparent fail). Several `tracestate` headers are joined with `,` by the caller.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Result<Self, TraceContextError> {
        let header = traceparent.trim_matches([' ', '\t']);
        let malformed = || {
            let cut = header
                .char_indices()
                .nth(64)
                .map_or(header.len(), |(i, _)| i);
            TraceContextError::Malformed(header[..cut].to_owned())
        };
        let b = header.as_bytes();
        if b.len() < 55 {
            return Err(malformed());
        }
        let mut version = [0u8; 1];
        decode_lower_hex(&header[..2], &mut version).ok_or_else(malformed)?;
        match version[0] {
            0xff => return Err(TraceContextError::VersionFf),
            0x00 if b.len() != 55 => return Err(malformed()),
            _ if b.len() > 55 && b[55] != b'-' => return Err(malformed()),
            _ => {}
        }
        if b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
            return Err(malformed());
        }
        let mut trace = [0u8; 16];
        let mut span = [0u8; 8];
        let mut flags = [0u8; 1];
        decode_lower_hex(&header[3..35], &mut trace).ok_or_else(malformed)?;
        decode_lower_hex(&header[36..52], &mut span).ok_or_else(malformed)?;
        decode_lower_hex(&header[53..55], &mut flags).ok_or_else(malformed)?;
        let (trace_id, span_id) = (TraceId(trace), SpanId(span));
        if !trace_id.is_valid() {
            return Err(TraceContextError::ZeroTraceId);
        }
        if !span_id.is_valid() {
            return Err(TraceContextError::ZeroParentId);
        }
        Ok(Self {
            trace_id,
            span_id,
            sampled: flags[0] & 0x01 != 0,
            state: tracestate.and_then(valid_tracestate),
        })
    }

    /// The `traceparent` header of this context: `00-<trace>-<span>-01` when sampled,
    /// `-00` when not.
    pub fn traceparent(&self) -> String {
        let flags = if self.sampled { "01" } else { "00" };
        format!("00-{}-{}-{flags}", self.trace_id, self.span_id)
    }

    /// A new context in the same trace with another span id, same flags and state.
    pub fn child(&self, span_id: SpanId) -> Self {
        Self {
            trace_id: self.trace_id,
            span_id,
            sampled: self.sampled,
            state: self.state.clone(),
        }
    }
}

/// The list members of `header`, trimmed and joined with `,`; `None` when any member is
/// invalid, a key repeats, there are more than 32 members or more than 512 characters,
/// or there is no member at all.
pub(crate) fn valid_tracestate(header: &str) -> Option<String> {
    let mut members: Vec<&str> = Vec::new();
    for member in header.split(',') {
        let member = member.trim_matches([' ', '\t']);
        if member.is_empty() {
            continue;
        }
        let (key, value) = member.split_once('=')?;
        if !valid_key(key) || !valid_value(value) {
            return None;
        }
        if members
            .iter()
            .any(|m| m.split_once('=').map(|(k, _)| k) == Some(key))
        {
            return None;
        }
        members.push(member);
        if members.len() > MAX_TRACESTATE_MEMBERS {
            return None;
        }
    }
    let joined = members.join(",");
    (!joined.is_empty() && joined.len() <= MAX_TRACESTATE_LEN).then_some(joined)
}

/// `simple-key` or `tenant-id@system-id` (W3C Trace Context, tracestate keys).
fn valid_key(key: &str) -> bool {
    let rest = |s: &str| {
        s.bytes()
            .all(|c| matches!(c, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'*' | b'/'))
    };
    match key.split_once('@') {
        None => {
            key.len() <= 256
                && key.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
                && rest(key)
        }
        Some((tenant, system)) => {
            tenant.len() <= 241
                && tenant
                    .as_bytes()
                    .first()
                    .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                && rest(tenant)
                && system.len() <= 14
                && system
                    .as_bytes()
                    .first()
                    .is_some_and(u8::is_ascii_lowercase)
                && rest(system)
        }
    }
}

/// 1 to 256 printable ASCII characters other than `,` and `=`, not ending in a space.
fn valid_value(value: &str) -> bool {
    let nblk = |c: u8| matches!(c, 0x21..=0x2b | 0x2d..=0x3c | 0x3e..=0x7e);
    (1..=256).contains(&value.len())
        && value.bytes().all(|c| c == b' ' || nblk(c))
        && value.bytes().last().is_some_and(nblk)
}
