//! How secrets look in JSON: a secret as listed, never its value ([`SecretView`]: `PUT`
//! and `GET /v1/secrets`, `sluice secrets set|list --json`), and what a key rotation did
//! ([`RotateKeyView`]: `sluice secrets rotate-key --json`).
//!
//! Owns: these shapes and their conversions. Must not: read or write anything, or hold
//! a secret's value.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sluice_store::{SealedKind, SecretInfo};
use utoipa::ToSchema;

/// A secret as listed: never its value.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SecretView {
    /// The secret's name, unique within its tenant; job types are granted secrets by name.
    #[schema(pattern = "^[A-Za-z_][A-Za-z0-9_]{0,127}$")]
    pub name: String,
    /// The value's length in bytes.
    #[schema(minimum = 0, maximum = 65536)]
    pub size: i32,
    /// Which operator key sealed it (a fingerprint of the key, never the key).
    #[schema(pattern = "^[0-9a-f]{16}$")]
    pub key_id: String,
    /// When the secret was first set.
    pub created_at: DateTime<Utc>,
    /// When its value was last set (re-sealing under a new operator key keeps it).
    pub updated_at: DateTime<Utc>,
}

impl From<SecretInfo> for SecretView {
    fn from(s: SecretInfo) -> Self {
        SecretView {
            name: s.name,
            size: s.size,
            key_id: s.key_id,
            created_at: s.created_at,
            updated_at: s.updated_at,
        }
    }
}

/// What one kind of sealed value went through in a key rotation.
#[derive(Debug, Serialize)]
pub struct RotatedKindView {
    /// `tenant_secret`, `webhook_secret` or `webhook_previous_secret`.
    pub kind: &'static str,
    /// Values of this kind re-sealed under the new key.
    pub resealed: u64,
    /// Values of this kind still under another key when the rotation ended.
    pub left: u64,
}

/// What `sluice secrets rotate-key` did.
#[derive(Debug, Serialize)]
pub struct RotateKeyView {
    /// The key every sealed value should now be under.
    pub key_id: String,
    /// Values re-sealed under it, of every kind.
    pub resealed: u64,
    /// Per kind, in a fixed order.
    pub kinds: Vec<RotatedKindView>,
    /// Values left under another key, each `tenant/row (kind): why`.
    pub left: Vec<String>,
}

impl RotatedKindView {
    /// What happened to the values of `kind`.
    pub fn new(kind: SealedKind, resealed: u64, left: u64) -> Self {
        RotatedKindView {
            kind: kind.as_str(),
            resealed,
            left,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sealed_kind_is_shown_by_its_own_name() {
        for kind in SealedKind::ALL {
            assert_eq!(
                serde_json::to_value(RotatedKindView::new(kind, 2, 1)).unwrap(),
                serde_json::json!({"kind": kind.as_str(), "resealed": 2, "left": 1})
            );
        }
        let names: std::collections::BTreeSet<&str> =
            SealedKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), SealedKind::ALL.len());
    }
}
