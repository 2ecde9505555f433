//! `sluice events send`: send a webhook event for the tenant (`--tenant`): stored, and
//! one delivery enqueued per enabled endpoint whose filter matches its type — what
//! `sluice.send_event(...)` does inside an application's transaction
//! (docs/webhooks.md). Prints the event id (`evt_N`).
//!
//! Thin: the store does it in one statement. Must not: send anything (the worker
//! delivers).

use anyhow::Context;
use clap::Subcommand;
use sluice_store::Store;

use super::output::Printer;
use sluice_wire::webhooks::{EventAccepted, event_label, payload_text};

#[derive(Debug, Subcommand)]
pub enum EventsCommand {
    /// Send an event to every enabled endpoint whose filter matches its type. With an
    /// idempotency key the tenant already used, prints that event's id and sends nothing.
    Send {
        /// The event type, e.g. `invoice.paid`.
        #[arg(long = "type", value_name = "TYPE")]
        event_type: String,
        /// The event's `data`, as JSON.
        #[arg(long, default_value = "{}")]
        payload: String,
        #[arg(long)]
        idempotency_key: Option<String>,
    },
}

pub async fn run(
    store: &Store,
    global: &super::Global,
    printer: &Printer,
    command: EventsCommand,
) -> anyhow::Result<()> {
    match command {
        EventsCommand::Send {
            event_type,
            payload,
            idempotency_key,
        } => {
            let payload: serde_json::Value =
                serde_json::from_str(&payload).context("--payload is not JSON")?;
            payload_text("--payload", &payload).map_err(anyhow::Error::msg)?;
            let id = store
                .send_event(
                    &global.tenant,
                    &event_type,
                    &payload,
                    idempotency_key.as_deref(),
                    None,
                )
                .await?;
            let sent = EventAccepted {
                id: event_label(id),
            };
            printer.value(&sent, &[("event", sent.id.clone())]);
        }
    }
    Ok(())
}
