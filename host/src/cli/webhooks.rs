//! `sluice webhooks create|list|show|update|delete|rotate-secret|test|deliveries|redeliver`:
//! the tenant's webhook endpoints (`--tenant`) and their deliveries
//! (docs/webhooks.md). `create` and `rotate-secret` print the signing secret,
//! once; nothing else ever does. `--json` prints the same objects as the HTTP API.
//!
//! Thin: `sluice_shared::webhooks` makes and seals secrets, the store checks every field and
//! scopes every statement by the tenant. Must not: send anything (the worker delivers),
//! or print a secret anywhere but `create` and `rotate-secret`.

use anyhow::bail;
use clap::{ArgGroup, Args, Subcommand};
use sluice_store::{EndpointUpdate, NewEndpoint, Store, parse_endpoint_id};

use super::output::{Printer, clip};
use sluice_shared::units::parse_duration;
use sluice_shared::webhooks::{self as hooks, EndpointError};
use sluice_wire::webhooks::{
    DeliveryView, EndpointView, Redelivered, TestSent, default_schedule_text, endpoint_label,
    event_label, grace, test_payload,
};

#[derive(Debug, Subcommand)]
pub enum WebhooksCommand {
    /// Create an endpoint; prints its id and its signing secret (shown this once). Needs
    /// the secrets key.
    #[command(args = super::flags::keys())]
    Create(CreateArgs),
    /// The tenant's endpoints.
    List,
    /// One endpoint: URL, filter, state (and why disabled), schedule, secret rotation.
    Show { id: String },
    /// Change an endpoint.
    Update(UpdateArgs),
    /// Delete an endpoint; its pending deliveries end `cancelled`.
    Delete { id: String },
    /// Give an endpoint a new signing secret (printed once); the previous one keeps
    /// signing beside it for --grace. Needs the secrets key.
    #[command(args = super::flags::keys())]
    RotateSecret {
        id: String,
        /// How long the previous secret keeps signing (at most 30 days; `0s`: not at all).
        #[arg(long, default_value = "24h")]
        grace: String,
    },
    /// Send a `sluice.test` event to this endpoint only, whatever its filter (a disabled endpoint's test delivery ends cancelled).
    Test { id: String },
    /// An endpoint's deliveries, newest first.
    Deliveries {
        id: String,
        /// At most this many, 1 to 1000.
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// Send a delivery's event again to its endpoint, as a new delivery (same webhook-id).
    Redeliver {
        /// The delivery's id (a job id, from `webhooks deliveries`).
        delivery: i64,
    },
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Where events are POSTed: an http:// or https:// URL.
    #[arg(long)]
    url: String,
    /// Event type patterns (repeatable or comma-separated): `invoice.paid`, `invoice.*`,
    /// `*`.
    #[arg(long, required = true, value_delimiter = ',', value_name = "PATTERN")]
    events: Vec<String>,
    #[arg(long, default_value = "")]
    description: String,
    /// Delays before retries, comma-separated (`5s,5m,30m`); default 5s, 5m, 30m, 2h, 5h,
    /// 10h, 10h. `--retry-schedule ''`: never retry.
    #[arg(long, value_delimiter = ',', value_name = "DURATIONS")]
    retry_schedule: Option<Vec<String>>,
    /// Longest time one attempt may take, 100ms to 5m (default 15s).
    #[arg(long)]
    timeout: Option<String>,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("state").args(["enable", "disable"])))]
#[command(group(ArgGroup::new("schedule").args(["retry_schedule", "default_retry_schedule"])))]
pub struct UpdateArgs {
    id: String,
    #[arg(long)]
    url: Option<String>,
    /// Replaces the filter (repeatable or comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "PATTERN")]
    events: Option<Vec<String>>,
    #[arg(long)]
    description: Option<String>,
    /// Deliver again (clears the reason it was disabled).
    #[arg(long)]
    enable: bool,
    /// Stop delivering (new events are not queued for it; the reason says who).
    #[arg(long)]
    disable: bool,
    /// Delays before retries, comma-separated (`5s,5m,30m`).
    #[arg(long, value_delimiter = ',', value_name = "DURATIONS")]
    retry_schedule: Option<Vec<String>>,
    /// Go back to the default retry schedule.
    #[arg(long)]
    default_retry_schedule: bool,
    #[arg(long)]
    timeout: Option<String>,
}

fn id_of(text: &str) -> anyhow::Result<i64> {
    Ok(parse_endpoint_id(text)?)
}

fn duration(flag: &str, text: &str) -> anyhow::Result<std::time::Duration> {
    parse_duration(text).map_err(|e| anyhow::anyhow!("--{flag}: {e}"))
}

/// `--retry-schedule 5s,5m`: an empty value (`''`) is no retries at all.
fn schedule(steps: &[String]) -> anyhow::Result<Vec<std::time::Duration>> {
    steps
        .iter()
        .filter(|s| !s.trim().is_empty())
        .map(|s| duration("retry-schedule", s))
        .collect()
}

fn keyed_error(verb: &str, e: EndpointError) -> anyhow::Error {
    match e {
        EndpointError::NoKey => anyhow::anyhow!(
            "webhooks {verb} needs the secrets key to seal the signing secret: pass --secrets-key-file PATH or set {} (docs/secrets.md)",
            sluice_shared::secrets::KEY_ENV
        ),
        other => other.into(),
    }
}

pub async fn run(
    store: &Store,
    global: &super::Global,
    printer: &Printer,
    command: WebhooksCommand,
) -> anyhow::Result<()> {
    let tenant = global.tenant.as_str();
    match command {
        WebhooksCommand::Create(args) => {
            let spec = NewEndpoint {
                tenant: tenant.to_owned(),
                url: args.url,
                events: args.events,
                description: args.description,
                retry_schedule: args.retry_schedule.as_deref().map(schedule).transpose()?,
                timeout: args.timeout.map(|t| duration("timeout", &t)).transpose()?,
            };
            let keyring = global.keyring()?;
            let (info, secret) = hooks::create_endpoint(store, keyring.as_ref(), &spec)
                .await
                .map_err(|e| keyed_error("create", e))?;
            print_secret(printer, EndpointView::with_secret(info, secret), "created");
        }
        WebhooksCommand::List => {
            let endpoints: Vec<EndpointView> = store
                .list_webhook_endpoints(tenant)
                .await?
                .into_iter()
                .map(Into::into)
                .collect();
            printer.table(
                endpoints,
                &["ID", "URL", "EVENTS", "STATE", "DESCRIPTION"],
                |e| {
                    vec![
                        e.id.clone(),
                        clip(&e.url, 60),
                        e.events.join(","),
                        if e.enabled { "enabled" } else { "disabled" }.to_owned(),
                        clip(&e.description, 40),
                    ]
                },
                std::convert::identity,
            );
        }
        WebhooksCommand::Show { id } => {
            let info = store.get_webhook_endpoint(tenant, id_of(&id)?).await?;
            print_endpoint(printer, &info.into());
        }
        WebhooksCommand::Update(args) => {
            let id = id_of(&args.id)?;
            let update = EndpointUpdate {
                url: args.url,
                events: args.events,
                description: args.description,
                enabled: match (args.enable, args.disable) {
                    (true, _) => Some(true),
                    (_, true) => Some(false),
                    _ => None,
                },
                retry_schedule: match (args.retry_schedule, args.default_retry_schedule) {
                    (Some(steps), _) => Some(Some(schedule(&steps)?)),
                    (None, true) => Some(None),
                    (None, false) => None,
                },
                timeout: args.timeout.map(|t| duration("timeout", &t)).transpose()?,
            };
            let info = store.update_webhook_endpoint(tenant, id, &update).await?;
            print_endpoint(printer, &info.into());
        }
        WebhooksCommand::Delete { id } => {
            let id = id_of(&id)?;
            store.delete_webhook_endpoint(tenant, id).await?;
            printer.message(&format!("endpoint {} deleted", endpoint_label(id)));
        }
        WebhooksCommand::RotateSecret {
            id,
            grace: grace_text,
        } => {
            let id = id_of(&id)?;
            let grace = grace("--grace", &grace_text).map_err(anyhow::Error::msg)?;
            let keyring = global.keyring()?;
            let (info, secret) = hooks::rotate_secret(store, keyring.as_ref(), tenant, id, grace)
                .await
                .map_err(|e| keyed_error("rotate-secret", e))?;
            print_secret(printer, EndpointView::with_secret(info, secret), "rotated");
        }
        WebhooksCommand::Test { id } => {
            let id = id_of(&id)?;
            let (event, delivery) = store.send_test_event(tenant, id, &test_payload(id)).await?;
            let sent = TestSent {
                event: event_label(event),
                delivery,
            };
            printer.value(
                &sent,
                &[
                    ("event", sent.event.clone()),
                    ("delivery", sent.delivery.to_string()),
                ],
            );
        }
        WebhooksCommand::Deliveries { id, limit } => {
            let id = id_of(&id)?;
            if !(1..=1000).contains(&limit) {
                bail!("--limit must be 1 to 1000, got {limit}");
            }
            // The endpoint must be the tenant's: an unknown id is an error, not an
            // empty list.
            store.get_webhook_endpoint(tenant, id).await?;
            let deliveries: Vec<DeliveryView> = store
                .webhook_deliveries(tenant, id, limit)
                .await?
                .into_iter()
                .map(Into::into)
                .collect();
            print_deliveries(printer, deliveries);
        }
        WebhooksCommand::Redeliver { delivery } => {
            let delivery = store.redeliver(tenant, delivery).await?;
            let new = Redelivered { delivery };
            printer.value(&new, &[("delivery", delivery.to_string())]);
        }
    }
    Ok(())
}

/// An endpoint with its new secret, and the warning that it is shown once.
fn print_secret(printer: &Printer, view: EndpointView, what: &str) {
    let secret = view.secret.clone().unwrap_or_default();
    if printer.is_json() {
        printer.value(&view, &[]);
        return;
    }
    printer.value(
        &view,
        &[
            ("endpoint", view.id.clone()),
            ("url", view.url.clone()),
            ("events", view.events.join(", ")),
            ("secret", secret),
        ],
    );
    let previous = view
        .previous_secret_until
        .map(|t| {
            format!(
                "; the previous secret signs beside it until {}",
                t.to_rfc3339()
            )
        })
        .unwrap_or_default();
    println!(
        "\n{what}: the signing secret is shown only this once; store it now (webhooks rotate-secret makes a new one){previous}"
    );
}

fn print_endpoint(printer: &Printer, view: &EndpointView) {
    let state = match (&view.enabled, &view.disabled_reason) {
        (true, _) => "enabled".to_owned(),
        (false, Some(reason)) => format!("disabled: {reason}"),
        (false, None) => "disabled".to_owned(),
    };
    let schedule = match &view.retry_schedule {
        None => format!("default ({})", default_schedule_text()),
        Some(steps) if steps.is_empty() => "none (one attempt)".to_owned(),
        Some(steps) => steps.join(", "),
    };
    let mut fields = vec![
        ("endpoint", view.id.clone()),
        ("tenant", view.tenant.clone()),
        ("url", view.url.clone()),
        ("events", view.events.join(", ")),
        ("description", view.description.clone()),
        ("state", state),
        ("retry schedule", schedule),
        ("timeout", view.timeout.clone()),
        ("key id", view.key_id.clone()),
    ];
    if let Some(until) = view.previous_secret_until {
        fields.push((
            "previous secret",
            format!("signs until {}", until.to_rfc3339()),
        ));
    }
    fields.push(("created", view.created_at.to_rfc3339()));
    fields.push(("updated", view.updated_at.to_rfc3339()));
    printer.value(view, &fields);
}

fn print_deliveries(printer: &Printer, deliveries: Vec<DeliveryView>) {
    printer.table(
        deliveries,
        &[
            "DELIVERY",
            "EVENT",
            "TYPE",
            "STATE",
            "ATTEMPTS",
            "STATUS",
            "NEXT/FINISHED",
            "ERROR",
        ],
        |d| {
            let when = match (&d.finished_at, d.state.as_str()) {
                (Some(at), _) => at.to_rfc3339(),
                (None, "pending") => format!("next {}", d.run_at.to_rfc3339()),
                (None, _) => "-".to_owned(),
            };
            vec![
                d.id.to_string(),
                d.event.clone(),
                d.event_type.clone().unwrap_or_else(|| "-".into()),
                d.state.clone(),
                format!("{}/{}", d.attempt, d.max_attempts),
                d.last_status.map_or("-".into(), |s| s.to_string()),
                when,
                clip(d.last_error.as_deref().unwrap_or(""), 60),
            ]
        },
        std::convert::identity,
    );
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(clap::Parser)]
    struct Webhooks {
        #[command(subcommand)]
        command: WebhooksCommand,
    }

    #[test]
    fn the_grace_flags_default_is_the_libraries() {
        let parsed = Webhooks::try_parse_from(["webhooks", "rotate-secret", "wh_1"]).unwrap();
        let WebhooksCommand::RotateSecret { grace: text, .. } = parsed.command else {
            panic!("parsed as another command");
        };
        assert_eq!(grace("--grace", &text), Ok(hooks::DEFAULT_ROTATION_GRACE));
    }
}
