//! Text a caller hands the store, checked before it reaches Postgres: a `text` value
//! cannot hold U+0000 (Postgres refuses the byte and the statement fails with an
//! encoding error that says nothing about the field).
//!
//! Owns: [`check`] (writes: refuse with `InvalidInput` naming the field), [`findable`]
//! (lookups: a name with NUL names nothing, so the caller answers "not found" without
//! asking the database) and [`lossy`] (text the store keeps but nobody typed as a name,
//! such as a guest's error message: NUL becomes U+FFFD). Must not: trim, normalise or
//! otherwise change text a caller will look up again.

use std::borrow::Cow;

use crate::StoreError;

/// Refuses `value` for `field` when Postgres could not store it.
pub(crate) fn check(field: &'static str, value: &str) -> Result<(), StoreError> {
    match value.find('\0') {
        None => Ok(()),
        Some(at) => Err(StoreError::InvalidInput {
            field,
            message: format!(
                "contains a NUL character (U+0000) at byte {at}; text fields cannot hold it"
            ),
        }),
    }
}

/// False when no stored row can have `value` as a name (it holds NUL).
pub(crate) fn findable(value: &str) -> bool {
    !value.contains('\0')
}

/// `value` with every NUL replaced by U+FFFD, for text kept as a record only.
pub(crate) fn lossy(value: &str) -> Cow<'_, str> {
    if value.contains('\0') {
        Cow::Owned(value.replace('\0', "\u{FFFD}"))
    } else {
        Cow::Borrowed(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nul_anywhere_is_refused_with_the_field_named() {
        for value in ["\0", "a\0", "\0b", "a\0b"] {
            let err = check("schedule name", value).unwrap_err().to_string();
            assert!(
                err.starts_with("invalid schedule name: contains a NUL"),
                "{err}"
            );
            assert!(!findable(value));
        }
        assert!(check("x", "plain é text").is_ok());
        assert!(findable("plain"));
    }

    #[test]
    fn lossy_replaces_nul_and_keeps_the_rest() {
        assert_eq!(lossy("a\0b"), "a\u{FFFD}b");
        assert!(matches!(lossy("ab"), Cow::Borrowed("ab")));
    }
}
