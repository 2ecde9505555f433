//! `sluice secrets set|list|delete|rotate-key`: the tenant's secrets (`--tenant`), and
//! re-sealing everything sealed under the operator's keys (every kind) under a new key. A value is read from stdin or
//! `--from-file`, never from an argument (process arguments are visible to every user of
//! the machine); it is never printed.
//!
//! Thin: [`sluice_shared::secrets`] validates, seals and rotates; the store writes. `--json`
//! prints the views of `sluice_wire::secrets`.

use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Subcommand;
use sluice_store::{Store, StoreError};

use super::output::Printer;
use sluice_shared::secrets::{self as host_secrets, DEFAULT_ROTATE_BATCH, SetSecretError};
use sluice_shared::units::format_size;
use sluice_wire::{RotateKeyView, RotatedKindView, SecretView};

#[derive(Debug, Subcommand)]
pub enum SecretsCommand {
    /// Set (or replace) a secret; the value is read from stdin, or from --from-file. One
    /// trailing newline is dropped (`echo value | sluice secrets set NAME`); use
    /// --keep-newline to keep it. Needs the secrets key.
    #[command(args = super::flags::tenant(), args = super::flags::keys())]
    Set {
        /// `[A-Za-z_][A-Za-z0-9_]*`, at most 128 characters, e.g. STRIPE_KEY.
        name: String,
        /// Read the value from this file instead of stdin.
        #[arg(long, value_name = "PATH")]
        from_file: Option<PathBuf>,
        /// Keep a trailing newline as part of the value.
        #[arg(long)]
        keep_newline: bool,
    },
    /// The tenant's secrets: names, sizes, key ids and times (never the values).
    #[command(args = super::flags::tenant())]
    List,
    /// Delete a secret (types granted it then get `not-found`).
    #[command(args = super::flags::tenant())]
    Delete { name: String },
    /// Re-seal everything sealed under the operator's keys (every tenant's secrets,
    /// every webhook endpoint's signing secret and the previous one it keeps) under the
    /// current key (--secrets-key-file or SLUICE_SECRETS_KEY), opening them with it or a
    /// previous key (--secrets-old-key-file / SLUICE_SECRETS_OLD_KEYS), in batches, while
    /// workers run; prints what it re-sealed per kind. See docs/secrets.md for the whole
    /// procedure.
    #[command(args = super::flags::keys())]
    RotateKey {
        /// Rows re-sealed per statement.
        #[arg(long, default_value_t = DEFAULT_ROTATE_BATCH)]
        batch: u32,
    },
}

pub async fn run(
    store: &Store,
    global: &super::Global,
    printer: &Printer,
    command: SecretsCommand,
) -> anyhow::Result<()> {
    let tenant = global.tenant.as_str();
    match command {
        SecretsCommand::Set {
            name,
            from_file,
            keep_newline,
        } => {
            let keyring = global.keyring()?;
            let bytes = match &from_file {
                Some(path) => super::read_file(path)?,
                None => {
                    let mut bytes = Vec::new();
                    std::io::stdin()
                        .read_to_end(&mut bytes)
                        .context("read the value from stdin")?;
                    bytes
                }
            };
            let origin = from_file
                .as_ref()
                .map_or("stdin".to_owned(), |p| p.display().to_string());
            let mut value = String::from_utf8(bytes)
                .map_err(|_| anyhow::anyhow!("value: {origin} is not UTF-8 text"))?;
            if !keep_newline {
                if value.ends_with("\r\n") {
                    value.truncate(value.len() - 2);
                } else if value.ends_with('\n') {
                    value.pop();
                }
            }
            let info = host_secrets::set_secret(store, keyring.as_ref(), tenant, &name, &value)
                .await
                .map_err(|e| match e {
                    SetSecretError::NoKey => anyhow::anyhow!(
                        "secrets set needs the secrets key: pass --secrets-key-file PATH or set {} (docs/secrets.md)",
                        host_secrets::KEY_ENV
                    ),
                    other => other.into(),
                })?;
            let fields = [
                ("secret", info.name.clone()),
                ("size", format_size(info.size as u64)),
                ("key id", info.key_id.clone()),
                ("updated", info.updated_at.to_rfc3339()),
            ];
            printer.value(&SecretView::from(info), &fields);
        }
        SecretsCommand::List => {
            let secrets = store.list_secrets(tenant).await?;
            printer.table(
                secrets,
                &["NAME", "SIZE", "KEY ID", "UPDATED"],
                |s| {
                    vec![
                        s.name.clone(),
                        format_size(s.size as u64),
                        s.key_id.clone(),
                        s.updated_at.to_rfc3339(),
                    ]
                },
                SecretView::from,
            );
        }
        SecretsCommand::Delete { name } => {
            if !store.delete_secret(tenant, &name).await? {
                return Err(StoreError::NotFound {
                    entity: "secret",
                    id: format!("{name} of tenant {tenant}"),
                }
                .into());
            }
            printer.message(&format!("secret `{name}` deleted"));
        }
        SecretsCommand::RotateKey { batch } => {
            let Some(keyring) = global.keyring()? else {
                bail!(
                    "rotate-key needs the new key as the current one (--secrets-key-file or {}) and the previous ones (--secrets-old-key-file or {})",
                    host_secrets::KEY_ENV,
                    host_secrets::OLD_KEYS_ENV
                );
            };
            if batch == 0 || batch > 10_000 {
                bail!("--batch must be 1 to 10000, got {batch}");
            }
            let report = host_secrets::rotate_key(store, &keyring, batch, |kind, n| {
                tracing::debug!(%kind, resealed = n, "rotate-key progress");
            })
            .await?;
            let mut fields = vec![("key id", report.key_id.clone())];
            for kind in &report.kinds {
                fields.push((kind.kind.label(), format!("{} re-sealed", kind.resealed)));
            }
            let left: u64 = report.kinds.iter().map(|k| k.left).sum();
            fields.push(("left", left.to_string()));
            let view = RotateKeyView {
                key_id: report.key_id.clone(),
                resealed: report.resealed,
                kinds: report
                    .kinds
                    .iter()
                    .map(|k| RotatedKindView::new(k.kind, k.resealed, k.left))
                    .collect(),
                left: report.left.clone(),
            };
            printer.value(&view, &fields);
            if left > 0 {
                let per_kind: Vec<String> = report
                    .kinds
                    .iter()
                    .filter(|k| k.left > 0)
                    .map(|k| format!("{} {}", k.left, k.kind))
                    .collect();
                bail!(
                    "{} are not under key id {}:\n  {}",
                    per_kind.join(", "),
                    report.key_id,
                    report.left.join("\n  ")
                );
            }
        }
    }
    Ok(())
}
