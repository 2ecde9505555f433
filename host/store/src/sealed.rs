//! Everything stored sealed under the operator's keys, as one list of kinds
//! ([`SealedKind::ALL`]): tenant secrets, endpoints' webhook signing secrets, and the
//! previous signing secret an endpoint keeps after `rotate-secret`. rotate-key walks
//! every kind through the same three operations, so a kind cannot be left behind: read a
//! batch of rows not under a key ([`Store::sealed_not_under_key`]), store re-sealed values
//! in one guarded statement ([`Store::reseal`]), count values by key id
//! ([`Store::sealed_key_counts`]).
//!
//! Owns: which table and column holds each kind (a test checks them against every
//! `key_id` column of the schema), and the per-kind dispatch. Must not: encrypt, decrypt
//! or see a value or a key (the host does), or change anything of a row but its sealing.

use crate::secrets::{Resealed, SealedSecret};
use crate::webhook_rules::endpoint_secret_name;
use crate::webhooks::SealedValue;
use crate::{Store, StoreError};

/// A kind of value sealed under the operator's keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SealedKind {
    /// `sluice.secrets`: a tenant's secrets (`secrets set`).
    TenantSecret,
    /// `sluice.webhook_endpoints.key_id`: an endpoint's signing secret.
    WebhookSecret,
    /// `sluice.webhook_endpoints.previous_key_id`: the signing secret an endpoint's
    /// `rotate-secret` moved out (signing beside the new one during its grace).
    WebhookPreviousSecret,
}

impl SealedKind {
    /// Every kind, in the order rotate-key walks them.
    pub const ALL: [SealedKind; 3] = [
        SealedKind::TenantSecret,
        SealedKind::WebhookSecret,
        SealedKind::WebhookPreviousSecret,
    ];

    /// The name in JSON and in `key_counts.sql`.
    pub fn as_str(self) -> &'static str {
        match self {
            SealedKind::TenantSecret => "tenant_secret",
            SealedKind::WebhookSecret => "webhook_secret",
            SealedKind::WebhookPreviousSecret => "webhook_previous_secret",
        }
    }

    /// How people read it (plural): `tenant secrets`, ...
    pub fn label(self) -> &'static str {
        match self {
            SealedKind::TenantSecret => "tenant secrets",
            SealedKind::WebhookSecret => "webhook signing secrets",
            SealedKind::WebhookPreviousSecret => "previous webhook signing secrets",
        }
    }

    /// The table (in schema `sluice`) and the column naming the key id of this kind.
    pub fn key_id_column(self) -> (&'static str, &'static str) {
        match self {
            SealedKind::TenantSecret => ("secrets", "key_id"),
            SealedKind::WebhookSecret => ("webhook_endpoints", "key_id"),
            SealedKind::WebhookPreviousSecret => ("webhook_endpoints", "previous_key_id"),
        }
    }

    fn parse(text: &str) -> Option<SealedKind> {
        SealedKind::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

impl std::fmt::Display for SealedKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// Which row of its kind a sealed value is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SealedRowKey {
    /// A tenant secret, by name.
    Secret(String),
    /// An endpoint, by id.
    Endpoint(i64),
}

/// One sealed value as stored, with what the host needs to open it. `Debug` shows no
/// bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SealedRow {
    /// Which table and column it is read from.
    pub kind: SealedKind,
    /// The tenant that owns it; bound into the sealing.
    pub tenant: String,
    /// Which row of its kind: the secret's name or the endpoint's id.
    pub key: SealedRowKey,
    /// The key id, nonce and ciphertext as stored.
    pub sealed: SealedValue,
}

impl SealedRow {
    /// The name bound into the sealing as associated data, beside the tenant.
    pub fn sealed_name(&self) -> String {
        match &self.key {
            SealedRowKey::Secret(name) => name.clone(),
            SealedRowKey::Endpoint(id) => endpoint_secret_name(*id),
        }
    }

    /// `acme/STRIPE_KEY`, `acme/ep_3`: which row, for reports.
    pub fn label(&self) -> String {
        match &self.key {
            SealedRowKey::Secret(name) => format!("{}/{name}", self.tenant),
            SealedRowKey::Endpoint(id) => format!("{}/ep_{id}", self.tenant),
        }
    }
}

/// A row re-sealed by rotate-key: as read (`old`) and its new nonce and ciphertext.
#[derive(Clone, Debug)]
pub struct ResealedRow {
    /// The row as read; the update is guarded on its key id and nonce, so a value changed
    /// since is never overwritten.
    pub old: SealedRow,
    /// The new sealing's nonce.
    pub nonce: Vec<u8>,
    /// The new sealing's ciphertext, under the key id given with the batch.
    pub ciphertext: Vec<u8>,
}

/// How many values of a kind are sealed under a key id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SealedCount {
    /// Which sealed values.
    pub kind: SealedKind,
    /// The operator key id they are sealed under.
    pub key_id: String,
    /// How many values of `kind` are under `key_id`.
    pub count: i64,
}

const ENDPOINTS_NOT_UNDER_KEY: &str = include_str!("../sql/webhooks/not_under_key.sql");
const PREVIOUS_NOT_UNDER_KEY: &str = include_str!("../sql/webhooks/previous_not_under_key.sql");
const REKEY_ENDPOINTS: &str = include_str!("../sql/webhooks/rekey.sql");
const REKEY_PREVIOUS: &str = include_str!("../sql/webhooks/rekey_previous.sql");
const KEY_COUNTS: &str = include_str!("../sql/sealed/key_counts.sql");

#[derive(sqlx::FromRow)]
struct EndpointSealed {
    tenant: String,
    id: i64,
    key_id: String,
    nonce: Vec<u8>,
    ciphertext: Vec<u8>,
}

impl Store {
    /// Up to `limit` values of `kind` (of all tenants) not sealed under `key_id`, in a
    /// stable order, after `after` (the last row of the previous batch).
    pub async fn sealed_not_under_key(
        &self,
        kind: SealedKind,
        key_id: &str,
        after: Option<&SealedRow>,
        limit: u32,
    ) -> Result<Vec<SealedRow>, StoreError> {
        let statement = match kind {
            SealedKind::TenantSecret => {
                let cursor = after.map(|r| (r.tenant.as_str(), r.sealed_name()));
                let cursor = cursor.as_ref().map(|(t, n)| (*t, n.as_str()));
                let rows = self.secrets_not_under_key(key_id, cursor, limit).await?;
                return Ok(rows.into_iter().map(secret_row).collect());
            }
            SealedKind::WebhookSecret => ENDPOINTS_NOT_UNDER_KEY,
            SealedKind::WebhookPreviousSecret => PREVIOUS_NOT_UNDER_KEY,
        };
        let after = match after.map(|r| &r.key) {
            Some(SealedRowKey::Endpoint(id)) => *id,
            _ => 0,
        };
        let rows: Vec<EndpointSealed> = sqlx::query_as(statement)
            .bind(key_id)
            .bind(after)
            .bind(i32::try_from(limit).unwrap_or(i32::MAX))
            .fetch_all(&self.pool)
            .await?;
        Ok(rows
            .into_iter()
            .map(|r| SealedRow {
                kind,
                tenant: r.tenant,
                key: SealedRowKey::Endpoint(r.id),
                sealed: SealedValue {
                    key_id: r.key_id,
                    nonce: r.nonce,
                    ciphertext: r.ciphertext,
                },
            })
            .collect())
    }

    /// Stores a batch of re-sealed values of `kind` under `key_id` in one guarded
    /// statement: a row changes only if it still holds the sealed value that was read.
    /// Returns how many did.
    pub async fn reseal(
        &self,
        kind: SealedKind,
        key_id: &str,
        batch: &[ResealedRow],
    ) -> Result<u64, StoreError> {
        if let Some(stray) = batch.iter().find(|r| r.old.kind != kind) {
            return Err(StoreError::InvalidInput {
                field: "batch",
                message: format!("{} in a batch of {kind}", stray.old.kind),
            });
        }
        let statement = match kind {
            SealedKind::TenantSecret => {
                let rows: Vec<Resealed> = batch.iter().map(as_resealed_secret).collect();
                return self.reseal_secrets(key_id, &rows).await;
            }
            SealedKind::WebhookSecret => REKEY_ENDPOINTS,
            SealedKind::WebhookPreviousSecret => REKEY_PREVIOUS,
        };
        if batch.is_empty() {
            return Ok(0);
        }
        let ids: Vec<i64> = batch
            .iter()
            .map(|r| match r.old.key {
                SealedRowKey::Endpoint(id) => Ok(id),
                SealedRowKey::Secret(_) => Err(StoreError::InvalidInput {
                    field: "batch",
                    message: format!("{} is not an endpoint", r.old.label()),
                }),
            })
            .collect::<Result<_, _>>()?;
        let rows: Vec<(i64,)> = sqlx::query_as(statement)
            .bind(
                batch
                    .iter()
                    .map(|r| r.old.tenant.clone())
                    .collect::<Vec<_>>(),
            )
            .bind(ids)
            .bind(
                batch
                    .iter()
                    .map(|r| r.old.sealed.key_id.clone())
                    .collect::<Vec<_>>(),
            )
            .bind(
                batch
                    .iter()
                    .map(|r| r.old.sealed.nonce.clone())
                    .collect::<Vec<_>>(),
            )
            .bind(key_id)
            .bind(batch.iter().map(|r| r.nonce.clone()).collect::<Vec<_>>())
            .bind(
                batch
                    .iter()
                    .map(|r| r.ciphertext.clone())
                    .collect::<Vec<_>>(),
            )
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.len() as u64)
    }

    /// How many values of each kind (of all tenants) each key id seals, by kind and key
    /// id; kinds with no value are absent.
    pub async fn sealed_key_counts(&self) -> Result<Vec<SealedCount>, StoreError> {
        let rows: Vec<(String, String, i64)> =
            sqlx::query_as(KEY_COUNTS).fetch_all(&self.pool).await?;
        rows.into_iter()
            .map(|(kind, key_id, count)| {
                let kind = SealedKind::parse(&kind).ok_or_else(|| StoreError::InvalidInput {
                    field: "kind",
                    message: format!("key_counts.sql names an unknown sealed kind `{kind}`"),
                })?;
                Ok(SealedCount {
                    kind,
                    key_id,
                    count,
                })
            })
            .collect()
    }
}

fn secret_row(row: SealedSecret) -> SealedRow {
    SealedRow {
        kind: SealedKind::TenantSecret,
        tenant: row.tenant,
        key: SealedRowKey::Secret(row.name),
        sealed: SealedValue {
            key_id: row.key_id,
            nonce: row.nonce,
            ciphertext: row.ciphertext,
        },
    }
}

fn as_resealed_secret(row: &ResealedRow) -> Resealed {
    Resealed {
        old: SealedSecret {
            tenant: row.old.tenant.clone(),
            name: row.old.sealed_name(),
            key_id: row.old.sealed.key_id.clone(),
            nonce: row.old.sealed.nonce.clone(),
            ciphertext: row.old.sealed.ciphertext.clone(),
        },
        nonce: row.nonce.clone(),
        ciphertext: row.ciphertext.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_name_and_parses_back() {
        for kind in SealedKind::ALL {
            // Its name in JSON is the same (`sluice::wire::RotatedKindView`, tested there).
            assert_eq!(SealedKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(SealedKind::parse("tokens"), None);
    }
}
