//! [`Host::run`]: starts every service of one process together — the claim loop, the
//! reaper beside it, the scheduler, retention and the metrics exporter — and stops them
//! together: the claim loop drains on `shutdown` (or ends by itself with `--drain`), then
//! the other services stop (the reaper keeps running through the drain) and the exporter
//! last.
//!
//! ```text
//! sluice worker                      sluice scheduler
//! ├─ claim loop (worker::run)        ├─ scheduler
//! │  ├─ attempts (one task each)     └─ retention
//! │  ├─ completer (flusher task)
//! │  ├─ store calls beside the loop
//! │  └─ listener (LISTEN/NOTIFY)
//! ├─ reaper
//! ├─ scheduler
//! ├─ retention
//! └─ metrics exporter (--metrics-listen)
//! ```
//!
//! Before anything starts, the process registers in the worker registry
//! (`sluice_shared::registration`; a live process with the same id refuses the start), and it
//! marks itself stopped once everything stopped. A worker's row is renewed by its job
//! heartbeat; a scheduler's by a small service of its own.
//!
//! Must not: parse flags (the CLI maps them onto [`HostConfig`]) or install signal
//! handlers (`signals` does, once per process).

use std::net::SocketAddr;

use anyhow::bail;
use sluice_sandbox::Sandbox;
use sluice_store::{NewWorker, Store, WorkerKind};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use sluice_shared::metrics::Metrics;
use sluice_shared::registration;
use sluice_worker::services::heartbeat::RegistryHeartbeat;
use sluice_worker::services::reaper::{Reaper, ReaperConfig};
use sluice_worker::services::retention::{Retention, RetentionConfig};
use sluice_worker::services::scheduler::{Scheduler, SchedulerConfig};
use sluice_worker::services::waker::{Waker, WakerConfig};
use sluice_worker::services::{self};
use sluice_worker::{self as worker, WorkerConfig, WorkerSummary};

/// What one process runs; `None` leaves a service out.
pub struct HostConfig {
    /// This process in the worker registry (`registration::describe`).
    pub register: NewWorker,
    /// The claim loop, with the sandbox its attempts run in.
    pub worker: Option<(WorkerConfig, Sandbox)>,
    /// The reaper of expired leases, which every worker host runs beside its claim loop;
    /// it stops when the claim loop has ended (after its drain).
    pub reaper: Option<ReaperConfig>,
    pub scheduler: Option<SchedulerConfig>,
    pub retention: Option<RetentionConfig>,
    /// Serve `GET /metrics` here.
    pub metrics_listen: Option<SocketAddr>,
    /// The process's one metrics registry (the worker's config gets a clone).
    pub metrics: Metrics,
}

/// See the module comment.
pub struct Host;

impl Host {
    /// Registers this process, runs until `shutdown` fires (or the claim loop drains) and
    /// every service stopped, then marks it stopped. The claim loop's summary, if one ran.
    pub async fn run(
        store: Store,
        config: HostConfig,
        shutdown: CancellationToken,
    ) -> anyhow::Result<Option<WorkerSummary>> {
        if config.worker.is_none() && config.scheduler.is_none() && config.retention.is_none() {
            bail!("nothing to run: both --no-scheduler and --no-retention were given");
        }
        let registration = registration::register(&store, &config.register).await?;
        let stop_heartbeat = CancellationToken::new();
        // A worker's row is renewed by its job heartbeat; a scheduler holds no leases.
        let heartbeat = (config.register.kind == WorkerKind::Scheduler).then(|| {
            let service = RegistryHeartbeat {
                store: store.clone(),
                registration: registration.clone(),
                lease: config.register.lease,
            };
            tokio::spawn(services::run(service, stop_heartbeat.clone()))
        });
        let ran = Self::run_services(store.clone(), config, shutdown).await;
        stop_heartbeat.cancel();
        if let Some(heartbeat) = heartbeat {
            let _ = heartbeat.await;
        }
        registration::stop(&store, &registration).await;
        ran
    }

    async fn run_services(
        store: Store,
        config: HostConfig,
        shutdown: CancellationToken,
    ) -> anyhow::Result<Option<WorkerSummary>> {
        let HostConfig {
            register: _,
            worker,
            reaper,
            scheduler,
            retention,
            metrics_listen,
            metrics,
        } = config;
        let exporter = CancellationToken::new();
        if let Some(addr) = metrics_listen {
            sluice_http::scrape::serve(addr, store.clone(), metrics.clone(), exporter.clone())
                .await?;
        }
        // They stop with the claim loop (also after --drain).
        let stop_services = shutdown.child_token();
        let mut tasks = JoinSet::new();
        if let Some(config) = scheduler {
            let service = Scheduler {
                store: store.clone(),
                config,
                metrics: metrics.clone(),
            };
            tasks.spawn(services::run(service, stop_services.clone()));
        }
        if let Some(config) = retention {
            let service = Retention {
                store: store.clone(),
                config,
                metrics: metrics.clone(),
            };
            tasks.spawn(services::run(service, stop_services.clone()));
        }
        // Not a child of `shutdown`: expired leases are still taken back during the drain.
        let stop_reaper = CancellationToken::new();
        if let Some(config) = reaper {
            let service = Reaper {
                store: store.clone(),
                config,
                metrics: metrics.clone(),
            };
            tasks.spawn(services::run(service, stop_reaper.clone()));
            // Where leases are reaped, waiting durable jobs are woken.
            let waker = Waker {
                store: store.clone(),
                config: WakerConfig::default(),
            };
            tasks.spawn(services::run(waker, stop_services.clone()));
        }
        let summary = match worker {
            Some((mut config, sandbox)) => {
                config.metrics = metrics;
                Some(worker::run(store, sandbox, config, shutdown).await)
            }
            None => {
                shutdown.cancelled().await;
                None
            }
        };
        stop_reaper.cancel();
        stop_services.cancel();
        while tasks.join_next().await.is_some() {}
        exporter.cancel();
        summary.transpose()
    }
}
