//! [`Mask`]: replaces every secret value revealed during an attempt with
//! `[secret NAME]` in what the host keeps of it (log bytes, failure messages, output).
//!
//! Masks exact occurrences of each value, longest first at each position, in one pass
//! (a replacement is never masked again). Also masks the tail of a log cut at its cap
//! when that tail is the start of a value. Does not mask transformed values (base64,
//! hex, URL- or JSON-escaped, split across separate log calls only if the pieces are
//! not adjacent): see docs/secrets.md. Must not know about wasmtime.

/// The values to hide, with their names.
#[derive(Debug, Default)]
pub(crate) struct Mask {
    /// (value, `[secret NAME]`), longest value first; empty values are left out.
    values: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Mask {
    pub(crate) fn new<'a>(revealed: impl IntoIterator<Item = (&'a str, &'a str)>) -> Mask {
        let mut values: Vec<(Vec<u8>, Vec<u8>)> = revealed
            .into_iter()
            .filter(|(_, value)| !value.is_empty())
            .map(|(name, value)| {
                (
                    value.as_bytes().to_vec(),
                    format!("[secret {name}]").into_bytes(),
                )
            })
            .collect();
        values.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        Mask { values }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `bytes` with every value replaced.
    pub(crate) fn bytes(&self, bytes: &[u8]) -> Vec<u8> {
        if self.is_empty() {
            return bytes.to_vec();
        }
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        'scan: while i < bytes.len() {
            for (value, replacement) in &self.values {
                if bytes[i..].starts_with(value) {
                    out.extend_from_slice(replacement);
                    i += value.len();
                    continue 'scan;
                }
            }
            out.push(bytes[i]);
            i += 1;
        }
        out
    }

    /// `text` with every value replaced (a UTF-8 value only ever matches whole
    /// characters, so the result stays UTF-8).
    pub(crate) fn text(&self, text: &str) -> String {
        if self.is_empty() {
            return text.to_owned();
        }
        String::from_utf8_lossy(&self.bytes(text.as_bytes())).into_owned()
    }

    /// A log cut at its cap: masked, and a tail that is the start of a value (the rest
    /// was dropped) replaced too.
    pub(crate) fn truncated_log(&self, bytes: &[u8]) -> Vec<u8> {
        let mut out = self.bytes(bytes);
        for (value, replacement) in &self.values {
            let longest = (value.len() - 1).min(out.len());
            if let Some(n) = (1..=longest).rev().find(|n| out.ends_with(&value[..*n])) {
                out.truncate(out.len() - n);
                out.extend_from_slice(replacement);
                break;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_occurrence_is_replaced_longest_first_in_one_pass() {
        let mask = Mask::new([("SHORT", "abc"), ("LONG", "abcdef"), ("EMPTY", "")]);
        assert_eq!(
            mask.text("x abcdef y abc zabcabc"),
            "x [secret LONG] y [secret SHORT] z[secret SHORT][secret SHORT]"
        );
        // A replacement is not scanned again, even if it holds a value.
        let mask = Mask::new([("S", "secret")]);
        assert_eq!(mask.text("my secret"), "my [secret S]");
        assert_eq!(mask.text("nothing"), "nothing");
        assert_eq!(Mask::new([]).text("abc"), "abc");
    }

    #[test]
    fn multibyte_values_and_logs_cut_inside_a_value() {
        let mask = Mask::new([("K", "clé-ü-42")]);
        assert_eq!(mask.text("a clé-ü-42 b"), "a [secret K] b");
        let log = "[INFO] token clé-".as_bytes();
        assert_eq!(mask.truncated_log(log), b"[INFO] token [secret K]".to_vec());
        assert_eq!(mask.truncated_log(b"[INFO] x"), b"[INFO] x".to_vec());
    }
}
