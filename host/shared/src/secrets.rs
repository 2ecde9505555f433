//! Tenant secrets between the operator, the store and the sandbox: the operator's keys
//! from the environment or files ([`load_keyring`]), [`set_secret`] (validated, sealed,
//! stored; shared by the CLI and the API), [`normalise_grants`] for `--secret` and the
//! API's `secrets`, [`secret_grant`] (a type's granted names opened inside the job's own
//! tenant, for the worker's registry) and [`rotate_key`] (re-seals everything sealed
//! under the operator's keys, every [`SealedKind`] in one walk).
//!
//! Crypto is `sluice-secrets`'s; SQL is the store's. Must not: log or print a value or a
//! key, put one in an error, or resolve a grant outside the job's tenant.

use std::path::{Path, PathBuf};

use anyhow::Context;
use sluice_sandbox::SecretGrant;
use sluice_secrets::{Keyring, OpenError, SealError, Sealed, SecretKey};
use sluice_store::{
    ResealedRow, SealedKind, SealedRow, SealedSecret, SealedValue, SecretInfo, Store, StoreError,
};

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
    /// This process holds no secrets key, so it cannot seal: start it with one.
    #[error(
        "this process has no secrets key: start it with --secrets-key-file PATH or {KEY_ENV} (docs/secrets.md)"
    )]
    NoKey,
    /// Sealing failed (the random source); nothing was written.
    #[error("cannot seal the value: {0}")]
    Seal(#[from] SealError),
    /// The store refused the secret (unknown tenant, bad name, value too large) or could
    /// not be reached.
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
        /// The job's tenant.
        tenant: String,
        /// The granted secret's name.
        name: String,
        /// Which key it needs and which this host holds.
        source: OpenError,
    },
    /// The row does not open under the key it names: altered or copied.
    #[error("secret {name} of tenant {tenant} cannot be opened: {source}")]
    Unreadable {
        /// The job's tenant.
        tenant: String,
        /// The granted secret's name.
        name: String,
        /// Why it does not open; setting the secret again fixes it.
        source: OpenError,
    },
    /// The secrets could not be read: an infrastructure failure (the attempt is given
    /// back).
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

/// What [`rotate_key`] did for one kind of sealed value.
#[derive(Debug)]
pub struct KindReport {
    /// Which sealed values: tenant secrets, or webhook endpoints' current or previous
    /// signing secrets.
    pub kind: SealedKind,
    /// Values of this kind re-sealed under the new key.
    pub resealed: u64,
    /// Values of this kind still under another key when the rotation ended.
    pub left: u64,
}

/// What [`rotate_key`] did.
#[derive(Debug, Default)]
pub struct RotateReport {
    /// The key every sealed value should now be under.
    pub key_id: String,
    /// Values re-sealed under it, of every kind.
    pub resealed: u64,
    /// Per kind (every kind of [`SealedKind::ALL`], in that order), what was re-sealed.
    pub kinds: Vec<KindReport>,
    /// Values left under another key, each `tenant/row (kind): why` (not opened by
    /// this keyring), and how many were sealed again under an old key after the walks.
    pub left: Vec<String>,
}

/// Re-seals every value sealed under the operator's keys (every [`SealedKind`]: tenant
/// secrets, webhook signing secrets and the previous ones endpoints keep) that is not
/// under the keyring's current key, in batches of `batch` rows (one read and one guarded
/// UPDATE each), while workers run: a row is only written if it still holds what was
/// read. Walks every kind up to three times, so values sealed again under an old key
/// during a walk are caught by the next; then counts what is still under another key.
pub async fn rotate_key(
    store: &Store,
    keyring: &Keyring,
    batch: u32,
    mut progress: impl FnMut(SealedKind, u64),
) -> anyhow::Result<RotateReport> {
    let key_id = keyring.current().id().to_owned();
    let mut kinds: Vec<KindReport> = SealedKind::ALL
        .into_iter()
        .map(|kind| KindReport {
            kind,
            resealed: 0,
            left: 0,
        })
        .collect();
    let mut left = Vec::new();
    for _walk in 0..3 {
        left.clear();
        let mut changed = 0u64;
        for kind in &mut kinds {
            let walk = walk_kind(store, keyring, kind.kind, &key_id, batch).await?;
            changed += walk.changed;
            kind.resealed += walk.resealed;
            progress(kind.kind, kind.resealed);
            left.extend(walk.left);
        }
        if changed == 0 {
            break;
        }
    }
    // Whatever the walks saw, the count is the word on what is left.
    for count in store
        .sealed_key_counts()
        .await
        .context("count sealed values by key id")?
    {
        if count.key_id != key_id
            && let Some(kind) = kinds.iter_mut().find(|k| k.kind == count.kind)
        {
            kind.left += count.count as u64;
        }
    }
    let unexplained = kinds
        .iter()
        .map(|k| k.left)
        .sum::<u64>()
        .saturating_sub(left.len() as u64);
    if unexplained > 0 {
        left.push(format!(
            "{unexplained} value(s) sealed under another key while the rotation ran: run rotate-key again"
        ));
    }
    Ok(RotateReport {
        resealed: kinds.iter().map(|k| k.resealed).sum(),
        key_id,
        kinds,
        left,
    })
}

/// One walk over the values of one kind.
struct Walk {
    resealed: u64,
    /// Values read but changed before their guarded write.
    changed: u64,
    left: Vec<String>,
}

async fn walk_kind(
    store: &Store,
    keyring: &Keyring,
    kind: SealedKind,
    key_id: &str,
    batch: u32,
) -> anyhow::Result<Walk> {
    let mut walk = Walk {
        resealed: 0,
        changed: 0,
        left: Vec::new(),
    };
    let mut after: Option<SealedRow> = None;
    loop {
        let rows = store
            .sealed_not_under_key(kind, key_id, after.as_ref(), batch.max(1))
            .await
            .with_context(|| format!("read a batch of {kind} to re-seal"))?;
        let Some(last) = rows.last() else { break };
        after = Some(last.clone());
        let mut resealed = Vec::with_capacity(rows.len());
        for row in rows {
            let name = row.sealed_name();
            match keyring.open(&row.tenant, &name, &sealed_value(&row.sealed)) {
                Ok(value) => {
                    let new = keyring
                        .seal(&row.tenant, &name, &value)
                        .context("seal under the new key")?;
                    resealed.push(ResealedRow {
                        old: row,
                        nonce: new.nonce,
                        ciphertext: new.ciphertext,
                    });
                }
                Err(e) => walk.left.push(format!("{} ({kind}): {e}", row.label())),
            }
        }
        let written = store
            .reseal(kind, key_id, &resealed)
            .await
            .with_context(|| format!("store a batch of re-sealed {kind}"))?;
        walk.changed += resealed.len() as u64 - written;
        walk.resealed += written;
    }
    Ok(walk)
}

fn sealed_value(value: &SealedValue) -> Sealed {
    Sealed {
        key_id: value.key_id.clone(),
        nonce: value.nonce.clone(),
        ciphertext: value.ciphertext.clone(),
    }
}
