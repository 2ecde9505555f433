//! Store calls the claim loop makes beside itself: each runs as its own task and comes
//! back as a [`Reply`], so the loop never waits on the database and keeps starting
//! queued jobs and collecting finished ones meanwhile.
//!
//! Owns the tasks and which call each one is (a call whose task panicked comes back as
//! that call's failure, so the loop never waits for a reply that cannot come). Must not
//! decide what a reply means (the producer does) or write a job's end (the completer
//! does; orphan releases go through it).

use std::collections::HashMap;
use std::time::Duration;

use sluice_store::{ClaimRequest, ClaimedJob, Lease, Store};
use tokio::task::{Id, JoinSet};
use tracing::warn;

use super::config::WorkerConfig;
use super::leases::LeaseNews;
use sluice_shared::metrics::StoreOperation;

/// A store call running beside the loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Call {
    Claim,
    Heartbeat,
    /// Which leases the database says this worker holds. `claims` is the number of
    /// claims started when it was asked (a claim started since makes the answer stale);
    /// `drain`: asked to decide whether a draining worker may stop.
    HeldLeases {
        claims: u64,
        drain: bool,
    },
    /// When the next pending job of this worker's tenants is due.
    DueIn,
    ReleaseOrphans,
}

/// What a call beside the loop came back with.
#[derive(Debug)]
pub(super) enum Reply {
    /// `None`: the claim failed (logged and counted).
    Claimed(Option<Vec<ClaimedJob>>),
    /// `None`: the heartbeat failed (logged and counted): try again soon.
    Renewed(Option<LeaseNews>),
    /// `held`: `None` when the database could not be read (logged). `due_after`, asked
    /// when `drain`: when the next job is due, read after the leases (so a retry the
    /// completer wrote before the leases were read is seen).
    HeldLeases {
        claims: u64,
        drain: bool,
        held: Option<Vec<Lease>>,
        due_after: Option<Result<Option<Duration>, ()>>,
    },
    /// `Err(())`: the look failed (logged); treat something as due soon.
    DueIn(Result<Option<Duration>, ()>),
    /// How many orphaned jobs were released.
    OrphansReleased(usize),
}

impl Reply {
    /// What `call` means when its task died without answering.
    fn failed(call: Call) -> Reply {
        match call {
            Call::Claim => Reply::Claimed(None),
            Call::Heartbeat => Reply::Renewed(None),
            Call::HeldLeases { claims, drain } => Reply::HeldLeases {
                claims,
                drain,
                held: None,
                due_after: None,
            },
            Call::DueIn => Reply::DueIn(Err(())),
            Call::ReleaseOrphans => Reply::OrphansReleased(0),
        }
    }
}

/// The calls in flight.
#[derive(Default)]
pub(super) struct Beside {
    tasks: JoinSet<Reply>,
    calls: HashMap<Id, Call>,
}

impl Beside {
    /// Starts `call`; its reply comes out of [`Beside::next`].
    pub(super) fn spawn(&mut self, call: Call, task: impl Future<Output = Reply> + Send + 'static) {
        let id = self.tasks.spawn(task).id();
        self.calls.insert(id, call);
    }

    /// Whether a call of this kind is in flight (`HeldLeases` of any kind).
    pub(super) fn in_flight(&self, kind: Call) -> bool {
        self.calls
            .values()
            .any(|call| std::mem::discriminant(call) == std::mem::discriminant(&kind))
    }

    /// The next reply; never resolves while nothing is in flight (cancel-safe).
    pub(super) async fn next(&mut self) -> Reply {
        match self.tasks.join_next_with_id().await {
            Some(Ok((id, reply))) => {
                self.calls.remove(&id);
                reply
            }
            Some(Err(error)) => {
                let call = self.calls.remove(&error.id());
                warn!(%error, ?call, "a store call beside the worker loop died");
                call.map_or(Reply::OrphansReleased(0), Reply::failed)
            }
            None => std::future::pending().await,
        }
    }
}

/// Claims up to `wanted` jobs, none of the tenants in `skip_tenants` (a spare slot's
/// claim); `None`: the claim failed (logged and counted), look again soon.
pub(super) async fn claim(
    store: &Store,
    config: &WorkerConfig,
    wanted: usize,
    max_contract: u8,
    secret_keys: Vec<String>,
    skip_tenants: Option<Vec<String>>,
) -> Option<Vec<ClaimedJob>> {
    let request = ClaimRequest {
        worker: config.worker_id.clone(),
        limit: wanted as u32,
        lease: config.claim_lease(),
        tenants: config.tenants.clone(),
        job_types: None,
        max_contract,
        secret_keys,
        skip_tenants,
    };
    match store.claim(&request).await {
        Ok(jobs) => Some(jobs),
        Err(error) => {
            warn!(%error, "claim failed; will look again");
            config.metrics.store_error(StoreOperation::claim);
            None
        }
    }
}

/// Time until the earliest pending job of these tenants is due (zero if one is due
/// now); `None` when nothing is pending. `Err(())`: the look failed (logged).
pub(super) async fn next_due_in(
    store: &Store,
    tenants: Option<&[String]>,
) -> Result<Option<Duration>, ()> {
    store.next_due_in(tenants).await.map_err(|error| {
        warn!(%error, "cannot look for pending jobs; will retry");
    })
}
