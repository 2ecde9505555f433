//! Tenant secrets between the operator, the store and the sandbox: the operator's keys
//! from the environment or files ([`load_keyring`]), [`set_secret`] (validated, sealed,
//! stored; shared by the CLI and the API), [`normalise_grants`] for `--secret` and the
//! API's `secrets`, [`secret_grant`] (a type's granted names opened inside the job's own
//! tenant, for the worker's registry) and [`rotate_key`].
//!
//! Crypto is `sluice-secrets`'s; SQL is the store's. Must not: log or print a value or a
//! key, put one in an error, or resolve a grant outside the job's tenant.

use std::path::{Path, PathBuf};

use anyhow::Context;
use sluice_sandbox::SecretGrant;
use sluice_secrets::{Keyring, OpenError, SealError, Sealed, SecretKey};
use sluice_store::{Resealed, SealedSecret, SecretInfo, Store, StoreError};

/// The current key, as 64 hex characters, in the environment.
pub const KEY_ENV: &str = "SLUICE_SECRETS_KEY";
/// Previous keys (decrypt only), comma-separated, in the environment.
pub const OLD_KEYS_ENV: &str = "SLUICE_SECRETS_OLD_KEYS";

/// Rows re-sealed per statement by [`rotate_key`].
pub const DEFAULT_ROTATE_BATCH: u32 = 100;

/// The host's keyring: the current key from `key_file` (`--secrets-key-file`) or
/// `SLUICE_SECRETS_KEY`, previous keys from `old_key_files` (`--secrets-old-key-file`)
/// and `SLUICE_SECRETS_OLD_KEYS`. `None` when no current key is given; previous keys
/// without a current one, both sources of the current key, or bad material are errors
/// naming the flag or variable.
pub fn load_keyring(
    key_file: Option<&Path>,
    old_key_files: &[PathBuf],
) -> anyhow::Result<Option<Keyring>> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let current = match (key_file, env(KEY_ENV)) {
        (Some(_), Some(_)) => anyhow::bail!(
            "both --secrets-key-file and {KEY_ENV} are set: give the secrets key one way"
        ),
        (Some(path), None) => Some(read_key("--secrets-key-file", path)?),
        (None, Some(text)) => Some(SecretKey::parse(KEY_ENV, &text)?),
        (None, None) => None,
    };
    let mut previous = Vec::new();
    for path in old_key_files {
        previous.push(read_key("--secrets-old-key-file", path)?);
    }
    if let Some(list) = env(OLD_KEYS_ENV) {
        for (i, text) in list.split(',').enumerate() {
            previous.push(SecretKey::parse(
                &format!("{OLD_KEYS_ENV} (entry {})", i + 1),
                text,
            )?);
        }
    }
    match current {
        Some(current) => Ok(Some(Keyring::new(current, previous))),
        None if previous.is_empty() => Ok(None),
        None => anyhow::bail!(
            "previous secrets keys were given (--secrets-old-key-file / {OLD_KEYS_ENV}) without a current one: give the current key with --secrets-key-file or {KEY_ENV}"
        ),
    }
}

fn read_key(flag: &str, path: &Path) -> anyhow::Result<SecretKey> {
    let origin = format!("{flag} {}", path.display());
    let text =
        std::fs::read_to_string(path).with_context(|| format!("{origin}: cannot read it"))?;
    Ok(SecretKey::parse(&origin, &text)?)
}

/// Why a secret was not set.
#[derive(Debug, thiserror::Error)]
pub enum SetSecretError {
    #[error(
        "this process has no secrets key: start it with --secrets-key-file PATH or {KEY_ENV} (docs/secrets.md)"
    )]
    NoKey,
    #[error("cannot seal the value: {0}")]
    Seal(#[from] SealError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Sets secret `name` of `tenant` to `value`: name and value checked (errors name the
/// field), sealed under the keyring's current key, stored in one statement.
pub async fn set_secret(
    store: &Store,
    keyring: Option<&Keyring>,
    tenant: &str,
    name: &str,
    value: &str,
) -> Result<SecretInfo, SetSecretError> {
    sluice_store::validate_secret_name("name", name)?;
    sluice_store::check_secret_value(value)?;
    let keyring = keyring.ok_or(SetSecretError::NoKey)?;
    let sealed = keyring.seal(tenant, name, value)?;
    Ok(store
        .set_secret(
            tenant,
            name,
            &sealed.key_id,
            &sealed.nonce,
            &sealed.ciphertext,
            value.len(),
        )
        .await?)
}

/// A type's granted names as given (`--secret`, the API's `secrets`): each checked,
/// duplicates removed, in order.
pub fn normalise_grants(names: &[String]) -> Result<Vec<String>, StoreError> {
    let mut out: Vec<String> = Vec::with_capacity(names.len());
    for name in names {
        sluice_store::validate_secret_name("secrets", name)?;
        if !out.contains(name) {
            out.push(name.clone());
        }
    }
    Ok(out)
}

fn sealed(row: &SealedSecret) -> Sealed {
    Sealed {
        key_id: row.key_id.clone(),
        nonce: row.nonce.clone(),
        ciphertext: row.ciphertext.clone(),
    }
}

/// Why a type's secrets could not be handed to an attempt.
#[derive(Debug, thiserror::Error)]
pub enum GrantError {
    /// A granted secret is sealed under a key this host does not hold (the row moved to
    /// a new key after the claim): another host should run the job.
    #[error("secret {name} of tenant {tenant} cannot be opened here: {source}")]
    UnknownKey {
        tenant: String,
        name: String,
        source: OpenError,
    },
    /// The row does not open under the key it names: altered or copied.
    #[error("secret {name} of tenant {tenant} cannot be opened: {source}")]
    Unreadable {
        tenant: String,
        name: String,
        source: OpenError,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The grant of `names` inside `tenant`: each name with its opened value, or `None`
/// when the tenant has not set it.
pub async fn secret_grant(
    store: &Store,
    keyring: &Keyring,
    tenant: &str,
    names: &[String],
) -> Result<SecretGrant, GrantError> {
    let rows = store.sealed_secrets(tenant, names).await?;
    let mut granted: Vec<(String, Option<String>)> =
        names.iter().map(|n| (n.clone(), None)).collect();
    for row in &rows {
        let value = keyring
            .open(tenant, &row.name, &sealed(row))
            .map_err(|source| {
                let (tenant, name) = (tenant.to_owned(), row.name.clone());
                match source {
                    OpenError::UnknownKey { .. } => GrantError::UnknownKey {
                        tenant,
                        name,
                        source,
                    },
                    _ => GrantError::Unreadable {
                        tenant,
                        name,
                        source,
                    },
                }
            })?;
        if let Some(slot) = granted.iter_mut().find(|(n, _)| *n == row.name) {
            slot.1 = Some(value);
        }
    }
    Ok(SecretGrant::new(granted))
}

/// What [`rotate_key`] did.
#[derive(Debug, Default, serde::Serialize)]
pub struct RotateReport {
    /// The key every row should now be under.
    pub key_id: String,
    /// Rows re-sealed under it.
    pub resealed: u64,
    /// Rows left under another key, each `tenant/name: why` (not opened by this
    /// keyring, or set again under an old key while the rotation ran).
    pub left: Vec<String>,
}

/// Re-seals every secret not under the keyring's current key, in batches of `batch`
/// rows (one read and one guarded UPDATE each), while workers run: a row is only
/// written if it still holds what was read. Walks the table up to three times, so rows
/// set again under an old key during a walk are caught by the next.
pub async fn rotate_key(
    store: &Store,
    keyring: &Keyring,
    batch: u32,
    mut progress: impl FnMut(u64),
) -> anyhow::Result<RotateReport> {
    let key_id = keyring.current().id().to_owned();
    let mut report = RotateReport {
        key_id: key_id.clone(),
        ..RotateReport::default()
    };
    for _walk in 0..3 {
        let mut left = Vec::new();
        let mut changed = 0u64;
        let mut after: Option<(String, String)> = None;
        loop {
            let cursor = after.as_ref().map(|(t, n)| (t.as_str(), n.as_str()));
            let rows = store
                .secrets_not_under_key(&key_id, cursor, batch.max(1))
                .await
                .context("read a batch of secrets to re-seal")?;
            let Some(last) = rows.last() else { break };
            after = Some((last.tenant.clone(), last.name.clone()));
            let mut resealed = Vec::with_capacity(rows.len());
            for row in rows {
                match keyring.open(&row.tenant, &row.name, &sealed(&row)) {
                    Ok(value) => {
                        let new = keyring
                            .seal(&row.tenant, &row.name, &value)
                            .context("seal under the new key")?;
                        resealed.push(Resealed {
                            old: row,
                            nonce: new.nonce,
                            ciphertext: new.ciphertext,
                        });
                    }
                    Err(e) => left.push(format!("{}/{}: {e}", row.tenant, row.name)),
                }
            }
            let written = store
                .reseal_secrets(&key_id, &resealed)
                .await
                .context("store a batch of re-sealed secrets")?;
            changed += resealed.len() as u64 - written;
            report.resealed += written;
            progress(report.resealed);
        }
        report.left = left;
        if changed == 0 {
            break;
        }
    }
    Ok(report)
}
