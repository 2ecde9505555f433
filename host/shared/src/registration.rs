//! This process's row in the worker registry (`sluice.workers`, `docs/fleet.md`): what
//! `sluice worker` and `sluice scheduler` record about themselves at start, the
//! heartbeat of a process that holds no leases (a scheduler), and the stop at shutdown.
//!
//! Owns: describing this process ([`describe`]: host name, pid, version, contracts), its
//! default id and component cache directory. The scheduler's row is renewed by a service
//! (`sluice_worker::services::heartbeat`), a worker's by its job heartbeat (`sluice_worker`'s `leases`, one
//! statement for both). Must not: speak SQL (the store does), decide whether an id is
//! free (the store's one guarded statement does: a read here first would race another
//! start), or import the services, the worker or the CLI that use it.

use std::path::PathBuf;
use std::time::Duration;

use sluice_store::{NewWorker, Registration, Store, WorkerKind};
use tracing::{info, warn};

/// This build's version, as recorded in the registry.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The machine's host name (`/proc/sys/kernel/hostname`; `host` when unreadable).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".into())
}

/// The id a process registers under when given none: host name and pid.
pub fn default_worker_id() -> String {
    format!("{}-{}", hostname(), std::process::id())
}

/// Where `sluice worker` and `sluice component push` keep precompiled components.
pub fn default_cache_dir() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("sluice")
        .join("components")
}

/// What this process registers: a worker names the contracts it runs (every one up to
/// `--max-contract`) and its concurrency; a scheduler neither.
pub fn describe(
    id: &str,
    kind: WorkerKind,
    contracts: &[sluice_sandbox::Contract],
    concurrency: Option<usize>,
    lease: Duration,
) -> NewWorker {
    NewWorker {
        id: id.to_owned(),
        kind,
        hostname: hostname(),
        pid: std::process::id(),
        version: VERSION.to_owned(),
        contracts: contracts.iter().map(|c| c.as_str().to_owned()).collect(),
        concurrency: concurrency.map(|c| u32::try_from(c).unwrap_or(u32::MAX)),
        lease,
    }
}

/// Registers `worker`; an id held by a live process is refused with the store's message
/// (which names that process and when it was last seen).
pub async fn register(store: &Store, worker: &NewWorker) -> anyhow::Result<Registration> {
    let registration = store.register_worker(worker).await?;
    info!(
        id = %worker.id,
        kind = worker.kind.as_str(),
        "registered in the worker registry (sluice workers list)"
    );
    Ok(registration)
}

/// Marks the registration stopped (its id is free at once); a failure is logged only:
/// the row then shows as lost once its lease passes.
pub async fn stop(store: &Store, registration: &Registration) {
    match store.stop_worker(registration).await {
        Ok(true) => info!(id = %registration.id, "marked stopped in the worker registry"),
        Ok(false) => warn!(
            id = %registration.id,
            "this process's registry row was no longer its own (lost, and its id taken by another process)"
        ),
        Err(error) => warn!(
            %error,
            id = %registration.id,
            "cannot mark this process stopped in the worker registry; it shows as lost once its lease passes"
        ),
    }
}
