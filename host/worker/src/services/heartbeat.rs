//! The registry heartbeat: renews the worker-registry row (`sluice.workers`,
//! `docs/fleet.md`) of a process that holds no leases (a scheduler); a worker's row is
//! renewed by its job heartbeat instead (`worker::leases`).
//!
//! Must not: register or stop the process (`sluice_shared::registration` does, through
//! `Host::run`).

use std::time::Duration;

use sluice_store::{Registration, Store};
use tracing::warn;

use super::Service;

/// Renews the registry row of a process without leases to heartbeat, every third of its
/// lease (a tenth after a failure).
pub struct RegistryHeartbeat {
    /// The store holding the registry row (`sluice.workers`).
    pub store: Store,
    /// The row this process registered (its id and session).
    pub registration: Registration,
    /// The registration's lease: it heartbeats every third of it.
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
