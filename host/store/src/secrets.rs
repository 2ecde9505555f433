//! Tenant secrets as stored rows: names, sizes and values sealed by the host (key id,
//! nonce, ciphertext), and the names each job type is granted (`job_types.secrets`).
//!
//! Owns: every statement on `sluice.secrets` and the value size limit (checked here for
//! every caller; the syntax of secret names is `validate`'s). Must not: encrypt, decrypt or see a value
//! or a key (the host seals with `sluice-secrets`; the store keeps what it is handed), or
//! return a row of another tenant than the one asked for.

use chrono::{DateTime, Utc};

use crate::validate::{validate_secret_name, validate_tenant_id};
use crate::{Store, StoreError, text};

/// Largest value of one secret, in bytes: 64 KiB.
pub const MAX_SECRET_BYTES: usize = 64 * 1024;

/// A secret as listed: never its value.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct SecretInfo {
    /// The secret's name, unique within its tenant (letters, digits and `_`, not starting
    /// with a digit).
    pub name: String,
    /// Which operator key sealed it (a fingerprint, never the key).
    pub key_id: String,
    /// The plain value's length in bytes.
    pub size: i32,
    /// When the secret was first set.
    pub created_at: DateTime<Utc>,
    /// When its value was last set (a rotate-key re-sealing keeps it).
    pub updated_at: DateTime<Utc>,
}

/// A value sealed by the host, as stored. `Debug` shows no bytes.
#[derive(Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct SealedSecret {
    /// The tenant that owns it; bound into the sealing.
    pub tenant: String,
    /// The secret's name; bound into the sealing.
    pub name: String,
    /// The id of the operator key that sealed it (16 hex characters).
    pub key_id: String,
    /// The 12-byte AES-GCM nonce of this sealing.
    pub nonce: Vec<u8>,
    /// The sealed value with its 16-byte tag; only the host's keyring opens it.
    pub ciphertext: Vec<u8>,
}

impl std::fmt::Debug for SealedSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealedSecret")
            .field("tenant", &self.tenant)
            .field("name", &self.name)
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

/// A row re-sealed by rotate-key: the value as read (`old`) and its new sealing.
#[derive(Clone, Debug)]
pub struct Resealed {
    /// The row as read; the update is guarded on its key id and nonce, so a value set since
    /// is never overwritten.
    pub old: SealedSecret,
    /// The new sealing's nonce.
    pub nonce: Vec<u8>,
    /// The new sealing's ciphertext, under the key id given with the batch.
    pub ciphertext: Vec<u8>,
}

/// Checks a secret's plain value before the host seals it: at most
/// [`MAX_SECRET_BYTES`], no NUL (like every other text).
pub fn check_secret_value(value: &str) -> Result<(), StoreError> {
    if value.len() > MAX_SECRET_BYTES {
        return Err(StoreError::InvalidInput {
            field: "value",
            message: format!(
                "{} bytes, over the limit of {MAX_SECRET_BYTES} bytes (64 KiB) a secret may hold",
                value.len()
            ),
        });
    }
    text::check("value", value)
}

const UPSERT_SECRET: &str = include_str!("../sql/secrets/upsert.sql");
const LIST_SECRETS: &str = include_str!("../sql/secrets/list.sql");
const DELETE_SECRET: &str = include_str!("../sql/secrets/delete.sql");
const SEALED_SECRETS: &str = include_str!("../sql/secrets/sealed.sql");
const NOT_UNDER_KEY: &str = include_str!("../sql/secrets/not_under_key.sql");
const REKEY_SECRETS: &str = include_str!("../sql/secrets/rekey.sql");

impl Store {
    /// Sets (inserts or replaces) secret `name` of `tenant`: `size` is the plain value's
    /// length, checked against [`MAX_SECRET_BYTES`]; the sealed bytes are stored as given.
    pub async fn set_secret(
        &self,
        tenant: &str,
        name: &str,
        key_id: &str,
        nonce: &[u8],
        ciphertext: &[u8],
        size: usize,
    ) -> Result<SecretInfo, StoreError> {
        validate_tenant_id(tenant).map_err(|_| StoreError::UnknownTenant(tenant.to_owned()))?;
        validate_secret_name("name", name)?;
        if size > MAX_SECRET_BYTES {
            return Err(StoreError::InvalidInput {
                field: "value",
                message: format!("{size} bytes, over the limit of {MAX_SECRET_BYTES} bytes"),
            });
        }
        let row: Option<SecretInfo> = sqlx::query_as(UPSERT_SECRET)
            .bind(tenant)
            .bind(name)
            .bind(key_id)
            .bind(nonce)
            .bind(ciphertext)
            .bind(size as i32)
            .fetch_optional(&self.pool)
            .await?;
        row.ok_or_else(|| StoreError::UnknownTenant(tenant.to_owned()))
    }

    /// A tenant's secrets by name, without values.
    pub async fn list_secrets(&self, tenant: &str) -> Result<Vec<SecretInfo>, StoreError> {
        if !text::findable(tenant) {
            return Ok(Vec::new());
        }
        Ok(sqlx::query_as(LIST_SECRETS)
            .bind(tenant)
            .fetch_all(&self.pool)
            .await?)
    }

    /// Deletes secret `name` of `tenant`; false when it had none of that name.
    pub async fn delete_secret(&self, tenant: &str, name: &str) -> Result<bool, StoreError> {
        if !text::findable(tenant) || !text::findable(name) {
            return Ok(false);
        }
        let row: Option<(String,)> = sqlx::query_as(DELETE_SECRET)
            .bind(tenant)
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.is_some())
    }

    /// The sealed values of those of `names` that `tenant` has set, by name.
    pub async fn sealed_secrets(
        &self,
        tenant: &str,
        names: &[String],
    ) -> Result<Vec<SealedSecret>, StoreError> {
        if names.is_empty() || !text::findable(tenant) {
            return Ok(Vec::new());
        }
        Ok(sqlx::query_as(SEALED_SECRETS)
            .bind(tenant)
            .bind(names)
            .fetch_all(&self.pool)
            .await?)
    }

    /// Up to `limit` secrets (of all tenants) not sealed under `key_id`, by tenant and
    /// name, after `after` (the last row of the previous batch).
    pub async fn secrets_not_under_key(
        &self,
        key_id: &str,
        after: Option<(&str, &str)>,
        limit: u32,
    ) -> Result<Vec<SealedSecret>, StoreError> {
        let cursor = after.map(|(t, n)| vec![t.to_owned(), n.to_owned()]);
        Ok(sqlx::query_as(NOT_UNDER_KEY)
            .bind(key_id)
            .bind(cursor)
            .bind(i32::try_from(limit).unwrap_or(i32::MAX))
            .fetch_all(&self.pool)
            .await?)
    }

    /// Stores a batch of re-sealed values under `key_id` in one guarded statement: a row
    /// changes only if it still holds the sealed value that was read. Returns how many did.
    pub async fn reseal_secrets(
        &self,
        key_id: &str,
        batch: &[Resealed],
    ) -> Result<u64, StoreError> {
        if batch.is_empty() {
            return Ok(0);
        }
        let col = |f: fn(&Resealed) -> String| batch.iter().map(f).collect::<Vec<_>>();
        let bytes = |f: fn(&Resealed) -> Vec<u8>| batch.iter().map(f).collect::<Vec<_>>();
        let rows: Vec<(String, String)> = sqlx::query_as(REKEY_SECRETS)
            .bind(col(|r| r.old.tenant.clone()))
            .bind(col(|r| r.old.name.clone()))
            .bind(col(|r| r.old.key_id.clone()))
            .bind(bytes(|r| r.old.nonce.clone()))
            .bind(key_id)
            .bind(bytes(|r| r.nonce.clone()))
            .bind(bytes(|r| r.ciphertext.clone()))
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_capped_and_refuse_nul() {
        assert!(check_secret_value(&"v".repeat(MAX_SECRET_BYTES)).is_ok());
        let err = check_secret_value(&"v".repeat(MAX_SECRET_BYTES + 1)).unwrap_err();
        assert!(err.to_string().contains("65537 bytes"), "{err}");
        assert!(
            check_secret_value("a\0b")
                .unwrap_err()
                .to_string()
                .contains("NUL")
        );
    }
}
