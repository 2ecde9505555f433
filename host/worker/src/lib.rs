//! `sluice-worker`: claims jobs up to the free slots, runs each attempt as a task, keeps
//! its leases, and stops on shutdown (draining first) or, with `--drain`, once nothing
//! runnable remains; and the background services a host runs beside it (`services`:
//! reaper, retention, scheduler, registry heartbeat). This file holds [`run`], which
//! starts the parts; the claim loop itself is `producer`. `Host::run` (the `sluice`
//! binary) starts the services beside the claim loop.
//!
//! Must not: speak SQL (the store does) or wasmtime (the sandbox does), or depend on a
//! web framework, the HTTP API, the dashboard or a CLI parser (`cargo tree -p
//! sluice-worker` shows no axum, maud, utoipa or clap).
//!
//! Modules import downward only, through these layers, top first (a module imports from
//! its own layer and those below, never in a circle; `modules_import_downward_only`
//! checks):
//! 1. `producer`, `plan`, `beside`, `leases`, `services`: the claim loop, when it claims,
//!    the store calls it runs beside itself, the heartbeat of what it holds, and the
//!    background services
//! 2. `slots`, `fair_queue`: the jobs it holds, and the queue fair between tenants
//! 3. `executor`, `webhook_attempt`: one attempt of a component, of a webhook delivery;
//!    `durable`: a durable job's journal and pinned component, for `executor`;
//!    `suspension`: a run that suspended, as the store records it
//! 4. `attempt`: what every attempt shares (its context, interrupt, slot guard);
//!    `attempt_trace`: its span
//! 5. `registry`, `record_cache`, `follow_ups`: job types, tenants and components as
//!    attempts need them, cached; the follow-up jobs a guest may ask for
//! 6. `config`, `prefetch`, `wakeup`, `shutdown`, `journal_cap`, `type_limits`: the
//!    configuration and its parts (a type's limits under its tenant's caps)
//! 7. `completer`, `usage_meter`: the one writer of an attempt's end, and of what its run
//!    used

#![warn(missing_docs)]

mod attempt;
mod attempt_trace;
mod beside;
mod completer;
mod config;
mod durable;
mod executor;
mod fair_queue;
mod follow_ups;
mod journal_cap;
mod leases;
mod plan;
mod prefetch;
mod producer;
mod record_cache;
mod registry;
pub mod services;
mod shutdown;
mod slots;
mod suspension;
mod type_limits;
mod usage_meter;
mod wakeup;
mod webhook_attempt;

use std::sync::Arc;

use sluice_sandbox::Sandbox;
use sluice_store::Store;
use tokio_util::sync::CancellationToken;
use tracing::info;

use attempt::AttemptContext;
pub use attempt::{Interrupt, StopReason};
use completer::Completer;
pub use completer::Recorded;
pub use config::{WorkerConfig, WorkerSummary, cpus, default_guest_threads};
pub use follow_ups::{DEFAULT_MAX_FOLLOW_UP_BYTES, DEFAULT_MAX_FOLLOW_UPS};
use registry::Registry;

pub use prefetch::{MAX_AUTO_DEPTH, Prefetch};
use producer::{Ended, Producer};
pub use shutdown::ShutdownTimeouts;
use usage_meter::UsageMeter;
use wakeup::Wakeups;
pub use wakeup::{IdlePolicy, Listen};

/// Run a worker until `shutdown` fires (drain, then interrupt and release what still
/// runs) or, with `drain`, until nothing runnable remains. The reaper is not part of it:
/// `Host::run` starts it beside the claim loop.
pub async fn run(
    store: Store,
    sandbox: Sandbox,
    config: WorkerConfig,
    shutdown: CancellationToken,
) -> anyhow::Result<WorkerSummary> {
    let config = Arc::new(config);
    let ctx = AttemptContext {
        completer: Completer::start(store.clone(), config.lease),
        registry: Registry::new(
            store.clone(),
            sandbox,
            config.limits.clone(),
            config.secrets.clone(),
        ),
        metrics: config.metrics.clone(),
        usage: UsageMeter::start(store.clone()),
        tracer: config.tracer.clone(),
    };
    let usage = ctx.usage.clone();
    let wakeups = Wakeups::start(&store, &config.listen, config.metrics.clone());
    info!(worker = %config.worker_id, concurrency = config.concurrency, prefetch = %config.prefetch, "worker started");
    config.metrics.secrets_key_loaded(config.secrets.is_some());
    say_what_secrets_this_host_opens(&store, config.secrets.as_ref()).await;
    let mut producer = Producer::new(store, config, ctx, wakeups);
    if producer.running(&shutdown).await == Ended::Signal {
        producer.shutting_down().await;
    }
    let summary = producer.summary;
    usage.close().await;
    info!(?summary, "worker stopped");
    Ok(summary)
}

/// Logs the secrets keys this worker holds, and warns when it has none, or when values
/// of any sealed kind (tenant secrets, webhook signing secrets) are under keys it does
/// not hold: the jobs that need those are not claimed here.
async fn say_what_secrets_this_host_opens(store: &Store, keys: Option<&sluice_secrets::Keyring>) {
    let Some(keys) = keys else {
        tracing::warn!(
            "no secrets key (SLUICE_SECRETS_KEY or --secrets-key-file): jobs of types granted secrets, and webhook deliveries, are left pending for a host that has one"
        );
        return;
    };
    let held = keys.ids();
    info!(key_ids = %held.join(", "), "secrets keys loaded");
    match store.sealed_key_counts().await {
        Ok(counts) => {
            let foreign: Vec<String> = counts
                .iter()
                .filter(|c| !held.contains(&c.key_id))
                .map(|c| format!("{}: {} under key id {}", c.kind, c.count, c.key_id))
                .collect();
            if !foreign.is_empty() {
                tracing::warn!(
                    held = %held.join(", "),
                    "secrets sealed under keys this host does not hold ({}): job types granted them, and deliveries to those endpoints' tenants, are left pending for a host that holds the key (wrong --secrets-key-file, or a rotation without --secrets-old-key-file?)",
                    foreign.join(", ")
                );
            }
        }
        Err(error) => tracing::warn!(%error, "cannot count secrets by key id"),
    }
}

#[cfg(test)]
#[path = "../../store/tests/it/module_graph.rs"]
mod module_graph;

#[cfg(test)]
mod tests {
    /// The layers of the crate comment hold; no folder has an import circle.
    #[test]
    fn modules_import_downward_only() {
        crate::module_graph::assert_modules_in_order(env!("CARGO_MANIFEST_DIR"), 7);
    }
}
