//! [`GuestText`]: an error message (`retry(msg)` / `fatal(msg)`) read from the guest's
//! memory, and its wording for `last_error`. The message is decoded from whatever the
//! guest wrote: only its first [`MESSAGE_BYTES`] are kept (the rest is counted, and shown
//! as `… (12,345 bytes dropped)`), and bytes that are not text in the guest's declared
//! encoding are replaced with U+FFFD and the message marked as such, never refused: a
//! `fatal` must stay fatal whatever its message.
//!
//! Pure functions on byte slices. Must not touch wasmtime (that is `guest_result.rs`) or
//! decide outcomes (that is `run.rs`).

use std::fmt;

/// Longest guest-supplied error message kept, in bytes of UTF-8 (the rest is dropped and
/// counted).
pub(crate) const MESSAGE_BYTES: usize = 4096;

/// An error message as read from the guest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum GuestText {
    /// The message, decoded; at most [`MESSAGE_BYTES`] of it kept.
    Read {
        /// The kept start of the message.
        head: String,
        /// Bytes (of the guest's encoding) after `head` that were dropped.
        dropped: u64,
        /// True when the message was not valid in the guest's string encoding (invalid
        /// sequences in `head` show as U+FFFD).
        lossy: bool,
    },
    /// The string's pointer and length do not describe bytes inside linear memory.
    Unreadable(String),
}

impl GuestText {
    /// Decodes a UTF-8 message (the encoding of every Rust, C, Go and Python guest).
    pub(crate) fn from_utf8(bytes: &[u8]) -> GuestText {
        let cut = utf8_cut(bytes, MESSAGE_BYTES);
        GuestText::Read {
            head: String::from_utf8_lossy(&bytes[..cut]).into_owned(),
            dropped: (bytes.len() - cut) as u64,
            lossy: std::str::from_utf8(bytes).is_err(),
        }
    }

    /// Decodes a UTF-16 (little-endian) message; `bytes` holds whole code units.
    pub(crate) fn from_utf16(bytes: &[u8]) -> GuestText {
        let units = bytes
            .chunks_exact(2)
            .map(|pair| u16::from_le_bytes([pair[0], pair[1]]));
        let mut head = String::new();
        let mut kept_units = 0usize;
        let mut full = false;
        let mut lossy = false;
        for decoded in char::decode_utf16(units) {
            let (ch, width) = match decoded {
                Ok(ch) => (ch, ch.len_utf16()),
                Err(_) => {
                    lossy = true;
                    (char::REPLACEMENT_CHARACTER, 1)
                }
            };
            // Keep decoding past the cut only to learn whether the rest is valid.
            if !full && head.len() + ch.len_utf8() <= MESSAGE_BYTES {
                head.push(ch);
                kept_units += width;
            } else {
                full = true;
            }
        }
        GuestText::Read {
            head,
            dropped: (bytes.len() / 2 - kept_units) as u64 * 2,
            lossy,
        }
    }

    /// Decodes a Latin-1 message (one half of the `latin1+utf16` encoding): always valid.
    pub(crate) fn from_latin1(bytes: &[u8]) -> GuestText {
        let mut head = String::new();
        let mut kept = 0usize;
        for &b in bytes {
            let ch = char::from(b);
            if head.len() + ch.len_utf8() > MESSAGE_BYTES {
                break;
            }
            head.push(ch);
            kept += 1;
        }
        GuestText::Read {
            head,
            dropped: (bytes.len() - kept) as u64,
            lossy: false,
        }
    }
}

impl fmt::Display for GuestText {
    /// `busy`, `card declined… (9,995,904 bytes dropped)`,
    /// `caf� [not valid UTF-8: invalid bytes shown as U+FFFD]`,
    /// `[unreadable: string at 0xfffffff0 of 16 bytes is outside linear memory (1.1 MiB)]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GuestText::Read {
                head,
                dropped,
                lossy,
            } => {
                f.write_str(head)?;
                if *dropped > 0 {
                    write!(f, "… ({} bytes dropped)", group_digits(*dropped))?;
                }
                if *lossy {
                    f.write_str(" [not valid UTF-8: invalid bytes shown as U+FFFD]")?;
                }
                Ok(())
            }
            GuestText::Unreadable(why) => write!(f, "[unreadable: {why}]"),
        }
    }
}

/// Where to cut `bytes` to keep at most `max` of them without splitting a UTF-8 sequence
/// (for valid UTF-8; on invalid bytes it only ever cuts earlier, never later).
fn utf8_cut(bytes: &[u8], max: usize) -> usize {
    if bytes.len() <= max {
        return bytes.len();
    }
    let mut cut = max;
    // A sequence is at most 4 bytes: step back over at most 3 continuation bytes.
    while cut > max.saturating_sub(3) && cut > 0 && bytes[cut] & 0xC0 == 0x80 {
        cut -= 1;
    }
    cut
}

/// `12345678` → `12,345,678`.
fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &GuestText) -> (&str, u64, bool) {
        match text {
            GuestText::Read {
                head,
                dropped,
                lossy,
            } => (head, *dropped, *lossy),
            GuestText::Unreadable(why) => panic!("unreadable: {why}"),
        }
    }

    #[test]
    fn short_messages_are_kept_whole() {
        let text = GuestText::from_utf8(b"card declined");
        assert_eq!(read(&text), ("card declined", 0, false));
        assert_eq!(text.to_string(), "card declined");
    }

    #[test]
    fn long_messages_keep_their_start_on_a_char_boundary_and_count_the_rest() {
        let long = "é".repeat(MESSAGE_BYTES); // 2 bytes each
        let text = GuestText::from_utf8(long.as_bytes());
        let (head, dropped, lossy) = read(&text);
        assert_eq!(head.len(), MESSAGE_BYTES);
        assert_eq!(dropped as usize, long.len() - MESSAGE_BYTES);
        assert!(!lossy);
        let odd = format!("a{long}");
        let text = GuestText::from_utf8(odd.as_bytes());
        let (head, dropped, _) = read(&text);
        assert_eq!(head.len(), MESSAGE_BYTES - 1, "never splits an é");
        assert_eq!(head.len() as u64 + dropped, odd.len() as u64);
    }

    #[test]
    fn the_truncation_is_shown_with_the_dropped_byte_count() {
        let text = GuestText::from_utf8(&vec![b'x'; MESSAGE_BYTES + 12_345]);
        let shown = text.to_string();
        assert!(shown.ends_with("x… (12,345 bytes dropped)"), "{shown}");
    }

    #[test]
    fn invalid_utf8_is_replaced_and_marked_even_beyond_the_kept_start() {
        let text = GuestText::from_utf8(b"caf\xff declined");
        assert_eq!(
            text.to_string(),
            "caf\u{FFFD} declined [not valid UTF-8: invalid bytes shown as U+FFFD]"
        );
        let mut late = vec![b'x'; MESSAGE_BYTES + 10];
        late.push(0xff);
        let text = GuestText::from_utf8(&late);
        let (head, dropped, lossy) = read(&text);
        assert!(lossy && !head.contains('\u{FFFD}'));
        assert_eq!(dropped, 11);
    }

    #[test]
    fn utf16_and_latin1_messages_are_decoded() {
        let utf16: Vec<u8> = "déclinée"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        assert_eq!(read(&GuestText::from_utf16(&utf16)), ("déclinée", 0, false));
        let lone_surrogate = [0x00, 0xD8, b'a', 0];
        assert_eq!(
            read(&GuestText::from_utf16(&lone_surrogate)),
            ("\u{FFFD}a", 0, true)
        );
        let long: Vec<u8> = std::iter::repeat_n([b'x', 0], MESSAGE_BYTES + 5)
            .flatten()
            .collect();
        assert_eq!(read(&GuestText::from_utf16(&long)).1, 10);
        assert_eq!(
            read(&GuestText::from_latin1(b"caf\xe9")),
            ("café", 0, false)
        );
    }

    #[test]
    fn digits_are_grouped_by_thousands() {
        assert_eq!(group_digits(0), "0");
        assert_eq!(group_digits(999), "999");
        assert_eq!(group_digits(1000), "1,000");
        assert_eq!(group_digits(12_345), "12,345");
        assert_eq!(group_digits(9_995_904), "9,995,904");
    }
}
