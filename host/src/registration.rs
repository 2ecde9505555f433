//! This process's row in the worker registry (`sluice.workers`, `docs/fleet.md`): what
//! `sluice worker` and `sluice scheduler` record about themselves at start, the
//! heartbeat of a process that holds no leases (a scheduler), and the stop at shutdown.
//!
//! Owns: describing this process ([`describe`]: host name, pid, version, contracts) and
//! the scheduler's registry heartbeat service. A worker's row is renewed by its job
//! heartbeat instead (`worker::leases`, one statement for both). Must not: speak SQL
//! (the store does) or decide whether an id is free (the store's one guarded statement
//! does: a read here first would race another start).

use std::time::Duration;

use sluice_store::{NewWorker, Registration, Store, WorkerKind};
use tracing::{info, warn};

use crate::services::Service;

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

/// Renews the registry row of a process without leases to heartbeat, every third of its
/// lease (a tenth after a failure).
pub struct RegistryHeartbeat {
    pub store: Store,
    pub registration: Registration,
    pub lease: Duration,
}

impl RegistryHeartbeat {
    fn every(&self) -> Duration {
        self.lease / 3
    }
}

impl Service for RegistryHeartbeat {
    /// `false`: the heartbeat failed or the row is no longer this registration's.
    type Report = bool;
    const NAME: &'static str = "registry heartbeat";

    fn first_wait(&self) -> Duration {
        self.every()
    }

    async fn run_once(&mut self) -> bool {
        match self.store.worker_heartbeat(&self.registration).await {
            Ok(true) => true,
            Ok(false) => {
                warn!(id = %self.registration.id, "this process's registry row was stopped or taken by another process");
                false
            }
            Err(error) => {
                warn!(%error, "registry heartbeat failed; retrying soon");
                false
            }
        }
    }

    fn wait_after(&self, ok: &bool) -> Duration {
        if *ok {
            self.every()
        } else {
            (self.lease / 10).clamp(Duration::from_millis(100), self.every())
        }
    }
}
