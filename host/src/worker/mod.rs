//! The worker: claims jobs up to the free slots, runs each attempt as a task, keeps its
//! leases, and stops on shutdown (draining first) or, with `--drain`, once nothing
//! runnable remains. This file holds its configuration and [`run`], which starts the
//! parts; the claim loop itself is `producer`.
//!
//! Modules import downward only: `producer` (the loop; `plan` says when to claim,
//! `beside` runs its store calls) → `slots` (held jobs) → `executor` (one attempt,
//! deciding its transition) → `completer` (writing it) → the store. `leases`, `wakeup`
//! and `shutdown` serve the producer; `registry` the executor. Nothing here speaks SQL
//! or wasmtime.

mod beside;
mod completer;
mod config;
mod executor;
mod fair_queue;
mod follow_ups;
mod leases;
mod plan;
mod producer;
mod registry;
mod shutdown;
mod slots;
mod wakeup;

use std::sync::Arc;

use sluice_sandbox::Sandbox;
use sluice_store::Store;
use tokio_util::sync::CancellationToken;
use tracing::info;

use completer::Completer;
pub use completer::Recorded;
pub use config::{WorkerConfig, WorkerSummary};
use executor::AttemptContext;
pub use executor::{Interrupt, StopReason};
use registry::Registry;

use crate::services::{self, reaper::Reaper, reaper::ReaperConfig};
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
        registry: Registry::new(store.clone(), sandbox, config.limits.clone()),
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
    info!(worker = %config.worker_id, concurrency = config.concurrency, prefetch = config.prefetch, "worker started");
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
