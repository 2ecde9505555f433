//! `sluice tenants create|list|show|limits|egress|max-running` and `sluice tenants token
//! create|list|revoke`: tenants, their caps and their API tokens. A token is printed once,
//! at creation; the database keeps only its SHA-256. `--json` prints the views of
//! `sluice_wire` (`show`: what `GET /v1/tenants/{id}` answers).

use anyhow::bail;
use clap::Subcommand;
use sluice_store::{Store, TenantRecord};

use super::output::Printer;
use super::tenant_limits::{LimitsArgs, apply, limit_fields, show_limit, size};
use sluice_wire::{NewTokenView, TenantView, TokenView};

#[derive(Debug, Subcommand)]
pub enum TenantsCommand {
    /// Create a tenant (ids are lowercase slugs: `acme`, `team-7`); idempotent.
    Create {
        id: String,
        /// Also mint an admin token (acts for any tenant) and print it once.
        #[arg(long)]
        admin: bool,
    },
    /// List tenants with their limits.
    List,
    /// Show a tenant's limits and egress bound.
    Show { id: String },
    /// Show a tenant's limits, or change some of them (the others are kept).
    Limits(Box<LimitsArgs>),
    /// Mint, list and revoke API tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Show or bound what the tenant's job types may be granted over HTTP: their
    /// `--allow-http` entries must each be inside one of these (docs/egress.md).
    #[command(args = super::flags::egress())]
    Egress {
        id: String,
        /// A destination the tenant may grant, `scheme://host[:port]` or
        /// `scheme://*.suffix[:port]` (repeatable; replaces the bound).
        #[arg(long = "allow", value_name = "URL", conflicts_with_all = ["unbounded", "deny_all"])]
        allow: Vec<String>,
        /// Remove the bound: any destination the host's deny list lets through.
        #[arg(long, conflicts_with = "deny_all")]
        unbounded: bool,
        /// The tenant may grant no outbound HTTP at all.
        #[arg(long)]
        deny_all: bool,
    },
    /// Pause a tenant: none of its jobs is claimed until `resume`; running ones finish,
    /// nothing is lost (docs/flow-control.md).
    Pause { id: String },
    /// Resume a paused tenant.
    Resume { id: String },
    /// Cap how many of a tenant's jobs run at once, fleet-wide (`none` lifts the cap).
    MaxRunning {
        id: String,
        /// A number of jobs (at least 1), or `none`.
        cap: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Mint a token for a tenant and print it (once: it cannot be shown again).
    Create {
        tenant: String,
        /// An admin token acts for any tenant (HTTP header `X-Sluice-Tenant`).
        #[arg(long)]
        admin: bool,
        /// A read-only token: the HTTP API answers its GET (and HEAD) requests and
        /// refuses every other one with 403 (dashboards, monitoring, support).
        #[arg(long)]
        read_only: bool,
        /// A note saying what the token is for.
        #[arg(long)]
        label: Option<String>,
    },
    /// List a tenant's tokens (ids and labels; never the secrets).
    List { tenant: String },
    /// Revoke a token by id: requests with it get 401 from then on.
    Revoke { tenant: String, id: i64 },
}

/// A tenant's caps for people, or its view as JSON.
fn print_tenant(printer: &Printer, record: TenantRecord) {
    let fields = limit_fields(&record);
    printer.value(&TenantView::from(record), &fields);
}

pub async fn run(
    store: &Store,
    global: &super::Global,
    printer: &Printer,
    command: TenantsCommand,
) -> anyhow::Result<()> {
    let pausing = matches!(command, TenantsCommand::Pause { .. });
    match command {
        TenantsCommand::Egress {
            id,
            allow,
            unbounded,
            deny_all,
        } => {
            let record = if unbounded {
                store.set_tenant_egress(&id, None).await?
            } else if deny_all || !allow.is_empty() {
                let bound =
                    sluice_shared::grants::normalise("--allow", &allow, &global.networks()?)?;
                store.set_tenant_egress(&id, Some(&bound)).await?
            } else {
                store.get_tenant(&id).await?.ok_or_else(|| {
                    anyhow::anyhow!(
                        "unknown tenant `{id}`: create it first (sluice tenants create {id})"
                    )
                })?
            };
            print_tenant(printer, record);
        }
        TenantsCommand::Show { id } => {
            let record = store.get_tenant(&id).await?.ok_or_else(|| {
                anyhow::anyhow!("unknown tenant `{id}`; `sluice tenants list` shows them")
            })?;
            print_tenant(printer, record);
        }
        TenantsCommand::Create { id, admin } => {
            store.create_tenant(&id).await?;
            if admin {
                let token = store
                    .create_token(&id, true, Some("created with the tenant"))
                    .await?;
                let fields = [
                    ("tenant", id.clone()),
                    ("admin token", token.token.clone()),
                    ("token id", token.record.id.to_string()),
                    ("note", "shown once: store it now".into()),
                ];
                printer.value(&NewTokenView::from(token), &fields);
            } else {
                printer.message(&format!("created tenant `{id}`"));
            }
        }
        TenantsCommand::Pause { id } | TenantsCommand::Resume { id } => {
            store.set_tenant_paused(&id, pausing).await?;
            let paused = pausing;
            printer.message(&format!(
                "tenant `{id}` {}",
                if paused {
                    "paused: its jobs stay pending until `sluice tenants resume`"
                } else {
                    "resumed"
                }
            ));
        }
        TenantsCommand::MaxRunning { id, cap } => {
            let cap = match cap.as_str() {
                "none" => None,
                n => Some(n.parse::<u32>().map_err(|_| {
                    anyhow::anyhow!("max-running cap {n:?} is not a number of jobs or `none`")
                })?),
            };
            store.set_tenant_max_running(&id, cap).await?;
            match cap {
                Some(n) => printer.message(&format!("tenant `{id}` runs at most {n} jobs at once")),
                None => printer.message(&format!("tenant `{id}` has no cap on running jobs")),
            }
        }
        TenantsCommand::List => {
            let tenants = store.list_tenants().await?;
            printer.table(
                tenants,
                &[
                    "id",
                    "created",
                    "max payload",
                    "rate",
                    "max component",
                    "paused",
                ],
                |t| {
                    vec![
                        t.id.clone(),
                        t.created_at.format("%Y-%m-%d %H:%M:%S").to_string(),
                        show_limit(t.limits.max_payload_bytes.map(i64::from), size),
                        t.limits
                            .max_enqueue_per_sec
                            .map_or("unlimited".into(), |r| format!("{r}/s")),
                        show_limit(t.limits.max_component_bytes, size),
                        if t.paused { "yes" } else { "no" }.to_owned(),
                    ]
                },
                TenantView::from,
            );
        }
        TenantsCommand::Limits(args) => {
            let Some(tenant) = store.get_tenant(&args.id).await? else {
                bail!(
                    "unknown tenant `{}`: create it first (sluice tenants create {})",
                    args.id,
                    args.id
                );
            };
            let limits = apply(tenant.limits.clone(), &args)?;
            let record = if limits == tenant.limits {
                tenant
            } else {
                store.set_tenant_limits(&args.id, &limits).await?
            };
            print_tenant(printer, record);
        }
        TenantsCommand::Token(TokenCommand::Create {
            tenant,
            admin,
            read_only,
            label,
        }) => {
            let token = store
                .create_token_with(&tenant, admin, read_only, label.as_deref())
                .await?;
            let fields = [
                ("tenant", tenant),
                ("token", token.token.clone()),
                ("token id", token.record.id.to_string()),
                ("admin", admin.to_string()),
                ("read-only", read_only.to_string()),
                ("note", "shown once: store it now".into()),
            ];
            printer.value(&NewTokenView::from(token), &fields);
        }
        TenantsCommand::Token(TokenCommand::List { tenant }) => {
            let tokens = store.list_tokens(&tenant).await?;
            printer.table(
                tokens,
                &["id", "admin", "read-only", "label", "created", "revoked"],
                |t| {
                    vec![
                        t.id.to_string(),
                        t.admin.to_string(),
                        t.read_only.to_string(),
                        t.label.clone().unwrap_or_default(),
                        t.created_at.format("%Y-%m-%d %H:%M:%S").to_string(),
                        t.revoked_at
                            .map(|at| at.format("%Y-%m-%d %H:%M:%S").to_string())
                            .unwrap_or_default(),
                    ]
                },
                TokenView::from,
            );
        }
        TenantsCommand::Token(TokenCommand::Revoke { tenant, id }) => {
            let record = store.revoke_token(&tenant, id).await?;
            let fields = [
                ("revoked token", record.id.to_string()),
                ("tenant", record.tenant.clone()),
            ];
            printer.value(&TokenView::from(record), &fields);
        }
    }
    Ok(())
}
