//! Trace and span identifiers: random ones, derived ones, and their lowercase hex form.
//!
//! Must not: hand out an all-zero id (W3C Trace Context and OTLP treat it as invalid), or
//! know anything of contexts, spans or exporting.

use std::fmt;

use ring::digest::{SHA256, digest};

/// A 16-byte trace id; `Display` is 32 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TraceId(pub [u8; 16]);

/// An 8-byte span id; `Display` is 16 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SpanId(pub [u8; 8]);

impl TraceId {
    /// A random id, never all-zero.
    pub fn random() -> Self {
        loop {
            let bytes: [u8; 16] = rand::random();
            if bytes != [0; 16] {
                return Self(bytes);
            }
        }
    }

    /// Whether this id is not all-zero (the only invalid value).
    pub fn is_valid(&self) -> bool {
        self.0 != [0; 16]
    }

    /// Deterministic, never all-zero: the same parts give the same id (the worker gives a
    /// job enqueued without a context a trace of its own, derived from its id, so every
    /// attempt of it lands in one trace). The first 16 bytes of SHA-256 over a domain
    /// label and each part (big-endian).
    pub fn derive(parts: &[i64]) -> Self {
        let mut input = Vec::with_capacity(24 + 8 * parts.len());
        input.extend_from_slice(b"sluice-trace/trace-id\0");
        for part in parts {
            input.extend_from_slice(&part.to_be_bytes());
        }
        let hash = digest(&SHA256, &input);
        let mut bytes = [0; 16];
        bytes.copy_from_slice(&hash.as_ref()[..16]);
        if bytes == [0; 16] {
            bytes[15] = 1;
        }
        Self(bytes)
    }

    /// Parses 32 lowercase hex digits (the `Display` form); `None` for anything else,
    /// including the all-zero id.
    pub fn from_hex(hex: &str) -> Option<Self> {
        let mut bytes = [0; 16];
        decode_lower_hex(hex, &mut bytes)?;
        Some(Self(bytes)).filter(Self::is_valid)
    }
}

impl SpanId {
    /// A random id, never all-zero.
    pub fn random() -> Self {
        loop {
            let bytes: [u8; 8] = rand::random();
            if bytes != [0; 8] {
                return Self(bytes);
            }
        }
    }

    /// Deterministic, never all-zero: the same inputs give the same id (the worker derives
    /// attempt span ids from (trace id, job id, attempt) so attempt N can link to attempt
    /// N-1 without storing anything). The first 8 bytes of SHA-256 over a domain label,
    /// the trace id and each part (big-endian).
    pub fn derive(trace_id: TraceId, parts: &[i64]) -> Self {
        let mut input = Vec::with_capacity(24 + 16 + 8 * parts.len());
        input.extend_from_slice(b"sluice-trace/span-id\0");
        input.extend_from_slice(&trace_id.0);
        for part in parts {
            input.extend_from_slice(&part.to_be_bytes());
        }
        let hash = digest(&SHA256, &input);
        let mut bytes = [0; 8];
        bytes.copy_from_slice(&hash.as_ref()[..8]);
        if bytes == [0; 8] {
            bytes[7] = 1;
        }
        Self(bytes)
    }

    /// Whether this id is not all-zero (the only invalid value).
    pub fn is_valid(&self) -> bool {
        self.0 != [0; 8]
    }

    /// Parses 16 lowercase hex digits (the `Display` form); `None` for anything else,
    /// including the all-zero id.
    pub fn from_hex(hex: &str) -> Option<Self> {
        let mut bytes = [0; 8];
        decode_lower_hex(hex, &mut bytes)?;
        Some(Self(bytes)).filter(Self::is_valid)
    }
}

/// Fills `out` from exactly `2 * out.len()` lowercase hex digits.
pub(crate) fn decode_lower_hex(hex: &str, out: &mut [u8]) -> Option<()> {
    let digits = hex.as_bytes();
    if digits.len() != out.len() * 2 {
        return None;
    }
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        }
    }
    for (byte, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(())
}

fn write_hex(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [0u8; 32];
    for (i, b) in bytes.iter().enumerate() {
        buf[2 * i] = DIGITS[usize::from(b >> 4)];
        buf[2 * i + 1] = DIGITS[usize::from(b & 0xf)];
    }
    // Only ASCII hex digits were written.
    f.write_str(std::str::from_utf8(&buf[..2 * bytes.len()]).unwrap_or_default())
}

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(f, &self.0)
    }
}

impl fmt::Debug for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TraceId({self})")
    }
}

impl fmt::Display for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(f, &self.0)
    }
}

impl fmt::Debug for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SpanId({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_print_as_lowercase_hex_and_parse_back() {
        let t = TraceId([
            0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e,
            0x47, 0x36,
        ]);
        assert_eq!(t.to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(TraceId::from_hex(&t.to_string()), Some(t));
        let s = SpanId([0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]);
        assert_eq!(s.to_string(), "00f067aa0ba902b7");
        assert_eq!(format!("{s:?}"), "SpanId(00f067aa0ba902b7)");
        assert_eq!(SpanId::from_hex("00f067aa0ba902b7"), Some(s));
        assert_eq!(SpanId::from_hex("00F067AA0BA902B7"), None);
        assert_eq!(SpanId::from_hex("0000000000000000"), None);
        assert_eq!(SpanId::from_hex("00f067aa0ba902b"), None);
    }

    #[test]
    fn random_ids_are_valid_and_differ() {
        assert!(TraceId::random().is_valid());
        assert!(SpanId::random().is_valid());
        assert_ne!(TraceId::random(), TraceId::random());
        assert_ne!(SpanId::random(), SpanId::random());
    }

    #[test]
    fn derived_trace_ids_are_stable_and_distinct() {
        let a = TraceId::derive(&[42]);
        assert_eq!(a, TraceId::derive(&[42]));
        assert!(a.is_valid());
        assert_ne!(a, TraceId::derive(&[43]));
        assert_ne!(a, TraceId::derive(&[42, 0]));
    }

    #[test]
    fn derived_span_ids_are_stable_and_distinct() {
        let t = TraceId([7; 16]);
        let a = SpanId::derive(t, &[42, 1]);
        assert_eq!(a, SpanId::derive(t, &[42, 1]));
        assert!(a.is_valid());
        assert_ne!(a, SpanId::derive(t, &[42, 2]));
        assert_ne!(a, SpanId::derive(t, &[1, 42]));
        assert_ne!(a, SpanId::derive(TraceId([8; 16]), &[42, 1]));
        assert_ne!(SpanId::derive(t, &[]), SpanId::derive(t, &[0]));
    }
}
