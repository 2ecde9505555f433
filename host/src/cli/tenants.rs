//! `sluice tenants create|list|show|limits|egress|max-running` and `sluice tenants token
//! create|list|revoke`: tenants, their caps and their API tokens. A token is printed once,
//! at creation; the database keeps only its SHA-256. `--json` prints the views of
//! `sluice_wire` (`show`: what `GET /v1/tenants/{id}` answers).

use std::time::Duration;

use anyhow::{Context, bail};
use clap::Subcommand;
use sluice_store::{Store, TenantLimits, TenantRecord};

use super::output::Printer;
use sluice_shared::units::{format_size, parse_duration, parse_size};
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

#[derive(Debug, clap::Args)]
pub struct LimitsArgs {
    /// The tenant.
    pub id: String,
    /// Largest job payload, e.g. `1MiB`.
    #[arg(long, value_parser = parse_size)]
    pub max_payload: Option<u64>,
    /// Largest component upload, e.g. `20MiB`.
    #[arg(long, value_parser = parse_size)]
    pub max_component: Option<u64>,
    /// Enqueue rate over HTTP: `100/s`, `600/min`, `10/h` (a bare number is per second).
    #[arg(long, value_parser = parse_rate)]
    pub rate: Option<f64>,
    /// Jobs accepted at once after a quiet period (default: one second's worth of --rate).
    #[arg(long)]
    pub burst: Option<u32>,
    /// Cap on a job type's fuel per attempt.
    #[arg(long)]
    pub max_fuel: Option<u64>,
    /// Cap on a job type's memory per attempt, e.g. `256MiB`.
    #[arg(long, value_parser = parse_size)]
    pub max_memory: Option<u64>,
    /// Cap on a job type's timeout per attempt, e.g. `5m`.
    #[arg(long, value_parser = parse_duration)]
    pub max_timeout: Option<Duration>,
    /// Cap on an attempt's output.
    #[arg(long, value_parser = parse_size)]
    pub max_output: Option<u64>,
    /// Cap on the log bytes kept per attempt.
    #[arg(long, value_parser = parse_size)]
    pub max_log: Option<u64>,
    /// Cap on a job type's outbound requests per attempt.
    #[arg(long)]
    pub max_http_requests: Option<u32>,
    /// Cap on a job type's request body per outbound request.
    #[arg(long, value_parser = parse_size)]
    pub max_http_request_body: Option<u64>,
    /// Cap on a job type's response body per outbound request.
    #[arg(long, value_parser = parse_size)]
    pub max_http_response_body: Option<u64>,
    /// Follow-up jobs one attempt may enqueue (default 1000; 0: none).
    #[arg(long)]
    pub max_follow_ups: Option<u32>,
    /// Payload bytes of one attempt's follow-up jobs together, e.g. `16MiB` (the default).
    #[arg(long, value_parser = parse_size)]
    pub max_follow_up_bytes: Option<u64>,
    /// Cap on one durable job's journal, e.g. `4MiB` (default: the type's, 16 MiB).
    #[arg(long, value_parser = parse_size)]
    pub max_journal_bytes: Option<u64>,
    /// Reset a limit to the host default (repeatable): payload, component, rate, burst,
    /// fuel, memory, timeout, output, log, http-requests, http-request-body,
    /// http-response-body, follow-ups, follow-up-bytes, journal-bytes.
    #[arg(long, value_parser = ["payload", "component", "rate", "burst", "fuel", "memory", "timeout", "output", "log", "http-requests", "http-request-body", "http-response-body", "follow-ups", "follow-up-bytes", "journal-bytes"])]
    pub unset: Vec<String>,
}

/// Parses `100/s`, `600/min`, `10/h` or a bare number (per second) into jobs per second.
pub fn parse_rate(text: &str) -> Result<f64, String> {
    let (count, per) = text.split_once('/').unwrap_or((text, "s"));
    let count: f64 = count
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a rate; try `100/s`, `600/min` or `10/h`"))?;
    let seconds = match per.trim() {
        "s" | "sec" | "second" => 1.0,
        "m" | "min" | "minute" => 60.0,
        "h" | "hour" => 3600.0,
        other => return Err(format!("`{other}` is not a rate unit; use s, min or h")),
    };
    let rate = count / seconds;
    if rate.is_finite() && rate > 0.0 {
        Ok(rate)
    } else {
        Err(format!("`{text}` is not a positive rate"))
    }
}

fn to_i64(field: &str, v: u64) -> anyhow::Result<i64> {
    i64::try_from(v).with_context(|| format!("--{field} {v} is too large"))
}

fn apply(mut limits: TenantLimits, args: &LimitsArgs) -> anyhow::Result<TenantLimits> {
    for field in &args.unset {
        match field.as_str() {
            "payload" => limits.max_payload_bytes = None,
            "component" => limits.max_component_bytes = None,
            "rate" => limits.max_enqueue_per_sec = None,
            "burst" => limits.enqueue_burst = None,
            "fuel" => limits.max_fuel = None,
            "memory" => limits.max_memory_bytes = None,
            "timeout" => limits.max_timeout_ms = None,
            "output" => limits.max_output_bytes = None,
            "http-requests" => limits.max_http_requests = None,
            "http-request-body" => limits.max_http_request_bytes = None,
            "http-response-body" => limits.max_http_response_bytes = None,
            "follow-ups" => limits.max_follow_ups = None,
            "follow-up-bytes" => limits.max_follow_up_bytes = None,
            "journal-bytes" => limits.max_journal_bytes = None,
            _ => limits.max_log_bytes = None,
        }
    }
    if let Some(v) = args.max_payload {
        limits.max_payload_bytes =
            Some(i32::try_from(v).context("--max-payload must be below 2 GiB")?);
    }
    if let Some(v) = args.max_component {
        limits.max_component_bytes = Some(to_i64("max-component", v)?);
    }
    if let Some(v) = args.rate {
        limits.max_enqueue_per_sec = Some(v);
    }
    if let Some(v) = args.burst {
        limits.enqueue_burst = Some(i32::try_from(v).context("--burst is too large")?);
    }
    if let Some(v) = args.max_fuel {
        limits.max_fuel = Some(to_i64("max-fuel", v)?);
    }
    if let Some(v) = args.max_memory {
        limits.max_memory_bytes = Some(to_i64("max-memory", v)?);
    }
    if let Some(d) = args.max_timeout {
        limits.max_timeout_ms = Some(to_i64("max-timeout", d.as_millis() as u64)?);
    }
    if let Some(v) = args.max_output {
        limits.max_output_bytes = Some(to_i64("max-output", v)?);
    }
    if let Some(v) = args.max_log {
        limits.max_log_bytes = Some(to_i64("max-log", v)?);
    }
    if let Some(v) = args.max_http_requests {
        limits.max_http_requests =
            Some(i32::try_from(v).context("--max-http-requests is too large")?);
    }
    if let Some(v) = args.max_http_request_body {
        limits.max_http_request_bytes = Some(to_i64("max-http-request-body", v)?);
    }
    if let Some(v) = args.max_http_response_body {
        limits.max_http_response_bytes = Some(to_i64("max-http-response-body", v)?);
    }
    if let Some(v) = args.max_follow_ups {
        limits.max_follow_ups = Some(i32::try_from(v).context("--max-follow-ups is too large")?);
    }
    if let Some(v) = args.max_follow_up_bytes {
        limits.max_follow_up_bytes = Some(to_i64("max-follow-up-bytes", v)?);
    }
    if let Some(v) = args.max_journal_bytes {
        limits.max_journal_bytes = Some(to_i64("max-journal-bytes", v)?);
    }
    Ok(limits)
}

fn show_limit(v: Option<i64>, unit: fn(i64) -> String) -> String {
    v.map_or_else(|| "default".to_owned(), unit)
}

fn size(v: i64) -> String {
    format_size(v.max(0) as u64)
}

fn limit_fields(t: &TenantRecord) -> Vec<(&'static str, String)> {
    let l = &t.limits;
    vec![
        ("tenant", t.id.clone()),
        ("paused", if t.paused { "yes" } else { "no" }.to_owned()),
        (
            "max payload",
            show_limit(l.max_payload_bytes.map(i64::from), size),
        ),
        ("max component", show_limit(l.max_component_bytes, size)),
        (
            "enqueue rate",
            l.max_enqueue_per_sec
                .map_or("unlimited".into(), |r| format!("{r}/s")),
        ),
        (
            "enqueue burst",
            show_limit(l.enqueue_burst.map(i64::from), |b| b.to_string()),
        ),
        ("max fuel", show_limit(l.max_fuel, |v| v.to_string())),
        ("max memory", show_limit(l.max_memory_bytes, size)),
        (
            "max timeout",
            show_limit(l.max_timeout_ms, |ms| format!("{ms}ms")),
        ),
        ("max output", show_limit(l.max_output_bytes, size)),
        ("max log", show_limit(l.max_log_bytes, size)),
        (
            "max http requests",
            show_limit(l.max_http_requests.map(i64::from), |v| v.to_string()),
        ),
        (
            "max http request body",
            show_limit(l.max_http_request_bytes, size),
        ),
        (
            "max http response body",
            show_limit(l.max_http_response_bytes, size),
        ),
        (
            "max follow-ups",
            show_limit(l.max_follow_ups.map(i64::from), |v| v.to_string()),
        ),
        (
            "max follow-up bytes",
            show_limit(l.max_follow_up_bytes, size),
        ),
        ("max journal", show_limit(l.max_journal_bytes, size)),
        (
            "egress bound",
            match &t.egress_allow {
                None => "none (the host's deny list only)".to_owned(),
                Some(list) if list.is_empty() => "deny all".to_owned(),
                Some(list) => list.join(" "),
            },
        ),
    ]
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

#[cfg(test)]
mod tests {
    use super::parse_rate;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("100/s").unwrap(), 100.0);
        assert_eq!(parse_rate("600/min").unwrap(), 10.0);
        assert_eq!(parse_rate("7").unwrap(), 7.0);
        assert!(parse_rate("0/s").is_err());
        assert!(parse_rate("5/fortnight").unwrap_err().contains("fortnight"));
    }
}
