//! Text a caller hands the store, checked before it reaches Postgres: a `text` value
//! cannot hold U+0000 (Postgres refuses the byte and the statement fails with an
//! encoding error that says nothing about the field).
//!
//! The same holds for JSON bound as `jsonb`: `jsonb` refuses a string or key holding
//! `\u0000` (SQLSTATE 22P05, a 500 to every caller that did not check).
//!
//! Owns: [`check`] (writes: refuse with `InvalidInput` naming the field), [`check_json`]
//! (the same for a JSON value bound as `jsonb`, whether it is written or searched for:
//! [`json_nul_at`] says where the NUL is, for surfaces that name fields their own way),
//! [`findable`] (lookups: a name with NUL names nothing, so the caller answers "not found"
//! without asking the database) and [`lossy`] (text the store keeps but nobody typed as a
//! name, such as a guest's error message: NUL becomes U+FFFD). Must not: trim, normalise
//! or otherwise change text a caller will look up again.

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

/// Where in `value` a string or an object key holds U+0000, as a JSON path (`$`,
/// `$.customer.name`, `$.items[2]`, `$["a b"]`; a key holding it is named by its parent
/// path plus `(a key)`); `None` when `jsonb` can hold all of it.
pub fn json_nul_at(value: &serde_json::Value) -> Option<String> {
    fn walk(value: &serde_json::Value, path: &mut String) -> Option<String> {
        match value {
            serde_json::Value::String(s) if s.contains('\0') => Some(path.clone()),
            serde_json::Value::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                let found = walk(item, path);
                path.truncate(len);
                found
            }),
            serde_json::Value::Object(map) => map.iter().find_map(|(key, item)| {
                if key.contains('\0') {
                    return Some(format!("{path} (a key)"));
                }
                let len = path.len();
                if !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    path.push_str(&format!(".{key}"));
                } else {
                    path.push_str(&format!("[{}]", serde_json::Value::from(key.as_str())));
                }
                let found = walk(item, path);
                path.truncate(len);
                found
            }),
            _ => None,
        }
    }
    walk(value, &mut "$".to_owned())
}

/// Refuses JSON `value` for `field` when Postgres's `jsonb` could not hold it (a string
/// or key with U+0000), naming where.
pub(crate) fn check_json(field: &'static str, value: &serde_json::Value) -> Result<(), StoreError> {
    match json_nul_at(value) {
        None => Ok(()),
        Some(at) => Err(StoreError::InvalidInput {
            field,
            message: format!(
                "holds a NUL character (\\u0000) at {at}; PostgreSQL's jsonb cannot hold it"
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
    fn json_with_nul_is_refused_naming_where() {
        use serde_json::json;
        let cases = [
            (json!("\0"), "$"),
            (json!({"a": {"b": ["x", "y\0"]}}), "$.a.b[1]"),
            (json!({"a b": "\0"}), "$[\"a b\"]"),
            (json!({"k\0": 1}), "$ (a key)"),
        ];
        for (value, at) in cases {
            assert_eq!(json_nul_at(&value).as_deref(), Some(at), "{value}");
            let err = check_json("payload filter", &value)
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("invalid payload filter: holds a NUL character (\\u0000) at "),
                "{err}"
            );
        }
        assert_eq!(
            json_nul_at(&json!({"a": ["é", 1, null, {"b": "\\u0000"}]})),
            None
        );
    }

    #[test]
    fn lossy_replaces_nul_and_keeps_the_rest() {
        assert_eq!(lossy("a\0b"), "a\u{FFFD}b");
        assert!(matches!(lossy("ab"), Cow::Borrowed("ab")));
    }
}
