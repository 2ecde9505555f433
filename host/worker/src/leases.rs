//! Keeping leases honest: renewing this worker's leases (one statement per lease length,
//! which also renews the worker's row in the registry; one with no leases when idle)
//! and finding jobs the database says this worker holds although it runs no attempt for
//! them (orphans), which the completer then releases.
//!
//! The calls here run beside the claim loop (`beside`) on a snapshot of the held jobs;
//! what they find comes back to the loop, which interrupts attempts and compares with
//! the jobs it holds *then*. Must not decide outcomes of attempts (`executor` does) or
//! write a job's end itself (`completer` does).

use std::collections::HashMap;
use std::time::Duration;

use sluice_store::{Lease, Store};
use tracing::warn;

use super::attempt::StopReason;
use super::completer::{Completer, Transition};
use super::config::WorkerConfig;
use super::slots::{HeldJob, Phase};
use sluice_shared::metrics::StoreOperation;

/// How soon a failed heartbeat is tried again (never later than its normal interval).
pub(super) fn heartbeat_retry(config: &WorkerConfig) -> Duration {
    (config.claim_lease() / 10).clamp(Duration::from_millis(100), Duration::from_secs(2))
}

/// The leases one heartbeat renews: started jobs to the full lease, jobs still in the
/// prefetch queue to the prefetch lease (one statement for each, or a single one when the
/// two leases are the same).
#[derive(Debug)]
pub(super) struct Renewal {
    started: Vec<Lease>,
    queued: Vec<Lease>,
}

/// What a heartbeat found: jobs whose lease was lost and jobs an operator cancelled.
#[derive(Debug, Default)]
pub(super) struct LeaseNews {
    lost: Vec<i64>,
    cancel_requested: Vec<i64>,
}

impl Renewal {
    /// A snapshot of the held jobs' leases.
    pub(super) fn of(config: &WorkerConfig, jobs: &HashMap<i64, HeldJob>) -> Renewal {
        let short = config.claim_lease();
        let (mut started, mut queued) = (Vec::new(), Vec::new());
        for job in jobs.values() {
            if job.phase == Phase::Queued && short < config.lease {
                queued.push(job.lease);
            } else {
                started.push(job.lease);
            }
        }
        Renewal { started, queued }
    }

    /// Extends the leases; `None` if the database could not be reached (logged and
    /// counted: try again soon, the leases are running out).
    pub(super) async fn send(self, store: &Store, config: &WorkerConfig) -> Option<LeaseNews> {
        let mut news = LeaseNews::default();
        // The first statement goes even with no leases: it also renews this worker's row
        // in the registry, so an idle worker does not look lost.
        let idle = self.started.is_empty() && self.queued.is_empty();
        let groups = [
            (self.started, config.lease),
            (self.queued, config.claim_lease()),
        ];
        for (i, (leases, lease)) in groups.into_iter().enumerate() {
            if leases.is_empty() && !(idle && i == 0) {
                continue;
            }
            match store.heartbeat(&config.worker_id, &leases, lease).await {
                Ok(report) => {
                    news.lost.extend(report.lost);
                    news.cancel_requested.extend(report.cancel_requested);
                }
                Err(error) => {
                    warn!(%error, "heartbeat failed; retrying soon");
                    config.metrics.store_error(StoreOperation::heartbeat);
                    return None;
                }
            }
        }
        Some(news)
    }
}

impl LeaseNews {
    /// Interrupts the attempts whose lease was lost or whose job was cancelled.
    pub(super) fn interrupt(&self, jobs: &HashMap<i64, HeldJob>) {
        for id in &self.lost {
            if let Some(job) = jobs.get(id) {
                warn!(job_id = id, "lease lost; interrupting the attempt");
                job.interrupt.stop(StopReason::LeaseLost);
            }
        }
        for id in &self.cancel_requested {
            if let Some(job) = jobs.get(id) {
                job.interrupt.stop(StopReason::Cancelled);
            }
        }
    }
}

/// The leases the database says `worker` holds; `None` if it could not be read (logged).
pub(super) async fn held_by(store: &Store, worker: &str) -> Option<Vec<Lease>> {
    match store.leases_held_by(worker).await {
        Ok(held) => Some(held),
        Err(error) => {
            warn!(%error, "cannot look for orphaned leases; will look again");
            None
        }
    }
}

/// Of the leases the database says this worker holds, those it runs no attempt for under
/// that lease: a claim whose reply was lost (the connection broke after the commit), an
/// attempt task that died without recording. Only meaningful when no claim was in
/// flight since the database was asked.
pub(super) fn orphans(held: Vec<Lease>, jobs: &HashMap<i64, HeldJob>) -> Vec<Lease> {
    held.into_iter()
        .filter(|lease| {
            !jobs
                .get(&lease.job_id)
                .is_some_and(|job| job.lease == *lease)
        })
        .collect()
}

/// Releases orphaned jobs (fenced by their lease token, so a job that moved on meanwhile
/// is left alone). Returns how many were released.
pub(super) async fn release_orphans(completer: &Completer, orphans: Vec<Lease>) -> usize {
    let mut released = 0;
    for lease in orphans {
        warn!(
            job_id = lease.job_id,
            "releasing a job this worker held without running it"
        );
        let reason = "orphaned: its worker held the lease but ran no attempt";
        if completer
            .record(lease, Transition::Release(reason))
            .await
            .is_some()
        {
            released += 1;
        }
    }
    released
}
