//! `sluice worker`: flags for the claim loop, signal handling, and the exit summary.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use sluice_sandbox::{Sandbox, SandboxConfig};
use sluice_store::Store;
use tokio_util::sync::CancellationToken;
use tracing::info;

use super::output::Printer;
use crate::units::parse_duration;
use crate::worker::{self, WorkerConfig};

#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    /// Attempts run at once.
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
    /// Only run jobs of these tenants (repeatable; default: all).
    #[arg(long = "only-tenant")]
    pub only_tenants: Vec<String>,
    /// Exit 0 once nothing runnable remains (for scripts and batch use).
    #[arg(long)]
    pub drain: bool,
    /// With --drain, wait for retries and delayed jobs due within this long.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub drain_horizon: Duration,
    /// Lease (visibility timeout) on claimed jobs; renewed every third of it.
    #[arg(long, value_parser = parse_duration, default_value = "5m")]
    pub lease: Duration,
    /// Look for work at least this often.
    #[arg(long, value_parser = parse_duration, default_value = "2s")]
    pub poll_interval: Duration,
    /// Run the reaper of expired leases this often.
    #[arg(long, value_parser = parse_duration, default_value = "15s")]
    pub reap_interval: Duration,
    /// Worker name in leases and attempt history (default: host-pid).
    #[arg(long, env = "SLUICE_WORKER_ID")]
    pub worker_id: Option<String>,
    /// Where precompiled components are cached.
    #[arg(long, env = "SLUICE_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Serve Prometheus metrics at http://ADDR/metrics, e.g. `127.0.0.1:9090`.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<SocketAddr>,
}

pub async fn run(store: Store, printer: &Printer, args: WorkerArgs) -> anyhow::Result<()> {
    let worker_id = args.worker_id.unwrap_or_else(default_worker_id);
    let sandbox = Sandbox::new(SandboxConfig {
        max_concurrency: args.concurrency as u32,
        cache_dir: Some(args.cache_dir.unwrap_or_else(default_cache_dir)),
        ..SandboxConfig::default()
    })
    .context("start the sandbox")?;
    let mut config = WorkerConfig::new(worker_id);
    config.concurrency = args.concurrency.max(1);
    config.tenants = (!args.only_tenants.is_empty()).then_some(args.only_tenants);
    config.drain = args.drain;
    config.drain_horizon = args.drain_horizon;
    config.lease = args.lease;
    config.poll_interval = args.poll_interval;
    config.reap_interval = args.reap_interval;

    let shutdown = CancellationToken::new();
    tokio::spawn(watch_signals(shutdown.clone()));
    let metrics_server = CancellationToken::new();
    if let Some(addr) = args.metrics_listen {
        crate::metrics::serve(
            addr,
            store.clone(),
            config.metrics.clone(),
            metrics_server.clone(),
        )
        .await?;
    }
    let summary = worker::run(store, sandbox, config, shutdown).await;
    metrics_server.cancel();
    let summary = summary?;
    printer.value(
        &summary,
        &[
            ("completed", summary.completed.to_string()),
            ("retrying", summary.retrying.to_string()),
            ("dead", summary.dead.to_string()),
            ("cancelled", summary.cancelled.to_string()),
            ("released", summary.released.to_string()),
        ],
    );
    Ok(())
}

/// First SIGTERM/SIGINT: graceful shutdown. Second: exit at once.
async fn watch_signals(shutdown: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return;
    };
    tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
    info!("signal received: finishing running jobs, then exiting (signal again to stop at once)");
    shutdown.cancel();
    tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
    std::process::exit(130);
}

fn default_worker_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "host".into());
    format!("{host}-{}", std::process::id())
}

fn default_cache_dir() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("sluice")
        .join("components")
}
