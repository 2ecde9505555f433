//! The checks several families of operations share: tenant ids, job type names, secret
//! names and grants, allow lists. Each mirrors a CHECK constraint, so a bad value is
//! refused with a message that names the field before any statement runs.
//!
//! A leaf below every module that stores these values. Must not: run SQL, or import a
//! family of operations (they import this).

use crate::{StoreError, text};

/// Longest secret name.
pub const MAX_SECRET_NAME_LEN: usize = 128;

/// At most this many names in one job type's grant (also a CHECK constraint).
pub const MAX_SECRET_GRANTS: usize = 64;

/// At most this many entries in one allow list (also a CHECK constraint).
pub const MAX_ALLOW_ENTRIES: usize = 64;

/// Checks an allow list's shape (count, each entry's text); the host parses the entries.
pub(crate) fn check_allow_list(field: &'static str, entries: &[String]) -> Result<(), StoreError> {
    if entries.len() > MAX_ALLOW_ENTRIES {
        return Err(StoreError::InvalidInput {
            field,
            message: format!(
                "{} entries, more than the {MAX_ALLOW_ENTRIES} an allow list may hold",
                entries.len()
            ),
        });
    }
    for entry in entries {
        if entry.is_empty() || entry.len() > 300 {
            return Err(StoreError::InvalidInput {
                field,
                message: format!("entry {entry:?} must be 1 to 300 bytes"),
            });
        }
        text::check(field, entry)?;
    }
    Ok(())
}

/// Checks the tenant id format, `^[a-z0-9][a-z0-9_-]{0,62}$` (also a CHECK constraint).
pub(crate) fn validate_tenant_id(id: &str) -> Result<(), StoreError> {
    let bytes = id.as_bytes();
    let first_ok = bytes
        .first()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let rest_ok = bytes
        .iter()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_' || *b == b'-');
    if first_ok && rest_ok && bytes.len() <= 63 {
        Ok(())
    } else {
        Err(StoreError::InvalidInput {
            field: "tenant",
            message: format!(
                "{id:?} is not a tenant id: use 1 to 63 characters from a-z, 0-9, '_' and '-', starting with a letter or digit"
            ),
        })
    }
}

/// Validates a job type name (also a CHECK constraint on both tables).
pub(crate) fn validate_job_type_name(name: &str) -> Result<(), StoreError> {
    let n = name.chars().count();
    if n == 0 || n > 128 {
        return Err(StoreError::InvalidInput {
            field: "job_type",
            message: format!("a job type name must be 1 to 128 characters, got {n}"),
        });
    }
    text::check("job_type", name)
}

/// Checks a secret name: `[A-Za-z_][A-Za-z0-9_]{0,127}` (also a CHECK constraint).
/// `field` names the request field in the error.
pub fn validate_secret_name(field: &'static str, name: &str) -> Result<(), StoreError> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if name.is_empty() || name.len() > MAX_SECRET_NAME_LEN || !first_ok || !rest_ok {
        text::check(field, name)?;
        return Err(StoreError::InvalidInput {
            field,
            message: format!(
                "{name:?} is not a secret name: use 1 to {MAX_SECRET_NAME_LEN} letters, digits and `_`, not starting with a digit (like STRIPE_KEY)"
            ),
        });
    }
    Ok(())
}

/// Checks a job type's granted names (count and syntax), naming the field.
pub(crate) fn check_grants(field: &'static str, names: &[String]) -> Result<(), StoreError> {
    if names.len() > MAX_SECRET_GRANTS {
        return Err(StoreError::InvalidInput {
            field,
            message: format!(
                "{} names, more than the {MAX_SECRET_GRANTS} a job type may be granted",
                names.len()
            ),
        });
    }
    for name in names {
        validate_secret_name(field, name)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_syntax_and_errors_name_the_field() {
        for good in ["A", "_", "STRIPE_KEY", "a1_b2", &"x".repeat(128)] {
            assert!(validate_secret_name("name", good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "1ABC",
            "has-dash",
            "sp ace",
            "é",
            &"x".repeat(129),
            "A\0",
        ] {
            let err = validate_secret_name("secret", bad).unwrap_err().to_string();
            assert!(err.starts_with("invalid secret: "), "{bad:?}: {err}");
        }
    }
}
