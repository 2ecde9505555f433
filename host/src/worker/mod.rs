//! The worker: claims jobs up to the free slots, runs each attempt as a task, keeps its
//! leases, and stops on shutdown (draining first) or, with `--drain`, once nothing
//! runnable remains. This file holds its configuration and [`run`], which starts the
//! parts; the claim loop itself is `producer`.
//!
//! Modules import downward only: `producer` (the loop; `plan` says when to claim,
//! `beside` runs its store calls) → `slots` (held jobs) → `executor` (one attempt,
//! deciding its transition) → `completer` (writing it) → the store. `leases`, `wakeup`,
//! `prefetch` (the queue's depth) and `shutdown` serve the producer; `registry` (its
//! records cached by `record_cache`) the executor. Nothing here speaks SQL or wasmtime.

mod beside;
mod completer;
mod config;
mod executor;
mod fair_queue;
mod follow_ups;
mod leases;
mod plan;
mod prefetch;
mod producer;
mod record_cache;
mod registry;
mod shutdown;
mod slots;
mod wakeup;
mod webhook_attempt;

use std::sync::Arc;

use sluice_sandbox::Sandbox;
use sluice_store::Store;
use tokio_util::sync::CancellationToken;
use tracing::info;

use completer::Completer;
pub use completer::Recorded;
pub use config::{WorkerConfig, WorkerSummary, cpus, default_guest_threads};
use executor::AttemptContext;
pub use executor::{Interrupt, StopReason};
use registry::Registry;

use crate::services::{self, reaper::Reaper, reaper::ReaperConfig};
pub use prefetch::{MAX_AUTO_DEPTH, Prefetch};
use producer::{Ended, Producer};
pub use shutdown::ShutdownTimeouts;
use wakeup::Wakeups;
pub use wakeup::{IdlePolicy, Listen};

/// Run a worker until `shutdown` fires (drain, then interrupt and release what still
/// runs) or, with `drain`, until nothing runnable remains. The reaper runs beside it as
/// a service and stops with it.
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
    };
    let stop_reaper = CancellationToken::new();
    let reaper = Reaper {
        store: store.clone(),
        config: ReaperConfig {
            interval: config.reap_interval,
            ..ReaperConfig::default()
        },
        metrics: config.metrics.clone(),
    };
    let reaper = tokio::spawn(services::run(reaper, stop_reaper.clone()));
    let wakeups = Wakeups::start(&store, &config.listen, config.metrics.clone());
    info!(worker = %config.worker_id, concurrency = config.concurrency, prefetch = %config.prefetch, "worker started");
    config.metrics.secrets_key_loaded(config.secrets.is_some());
    say_what_secrets_this_host_opens(&store, config.secrets.as_ref()).await;
    let mut producer = Producer::new(store, config, ctx, wakeups);
    if producer.running(&shutdown).await == Ended::Signal {
        producer.shutting_down().await;
    }
    stop_reaper.cancel();
    let _ = reaper.await;
    let summary = producer.summary;
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
