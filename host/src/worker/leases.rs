//! Keeping leases honest: renewing this worker's leases (one statement for all of them),
//! releasing jobs the database says this worker holds although it runs no attempt for
//! them (orphans), and reaping every worker's expired leases.
//!
//! Owns when these run and what is logged and counted. Must not decide outcomes of
//! attempts (`executor` does) or write a job's end (the completer does) or run concurrently with a claim of this worker: the
//! orphan check compares the database with the loop's `running` map, which is only
//! complete between claims.

use std::collections::HashMap;
use std::time::Duration;

use sluice_store::{Lease, Store};
use tracing::{debug, info, warn};

use super::completer::{Completer, Transition};
use super::slots::{Phase, Running};
use super::stats::WorkerStats;
use super::{StopReason, WorkerConfig};

/// How soon a failed heartbeat is tried again (never later than its normal interval).
pub(super) fn heartbeat_retry(config: &WorkerConfig) -> Duration {
    (config.claim_lease() / 10).clamp(Duration::from_millis(100), Duration::from_secs(2))
}

/// Extends every lease this worker holds and interrupts the attempts whose lease was
/// lost or whose job an operator cancelled: started jobs to the full lease, jobs still
/// in the prefetch queue to the prefetch lease (one statement for each, or a single one
/// when the two leases are the same). False if the database could not be reached (try
/// again soon: the leases are running out).
pub(super) async fn renew(
    store: &Store,
    config: &WorkerConfig,
    running: &HashMap<i64, Running>,
) -> bool {
    let short = config.claim_lease();
    let (mut started, mut queued) = (Vec::new(), Vec::new());
    for job in running.values() {
        if job.phase == Phase::Queued && short < config.lease {
            queued.push(job.lease);
        } else {
            started.push(job.lease);
        }
    }
    let started = renew_group(store, config, running, &started, config.lease).await;
    let queued = renew_group(store, config, running, &queued, short).await;
    started && queued
}

async fn renew_group(
    store: &Store,
    config: &WorkerConfig,
    running: &HashMap<i64, Running>,
    leases: &[Lease],
    lease: Duration,
) -> bool {
    if leases.is_empty() {
        return true;
    }
    match store.heartbeat(&config.worker_id, leases, lease).await {
        Ok(report) => {
            for id in report.lost {
                if let Some(job) = running.get(&id) {
                    warn!(job_id = id, "lease lost; interrupting the attempt");
                    job.interrupt.stop(StopReason::LeaseLost);
                }
            }
            for id in report.cancel_requested {
                if let Some(job) = running.get(&id) {
                    job.interrupt.stop(StopReason::Cancelled);
                }
            }
            true
        }
        Err(error) => {
            warn!(%error, "heartbeat failed; retrying soon");
            config
                .metrics
                .store_error(crate::metrics::StoreOperation::heartbeat);
            false
        }
    }
}

/// Releases jobs the database says this worker holds although it runs no attempt for
/// them under that lease: a claim whose reply was lost (the connection broke after the
/// commit), an attempt task that died without recording. Fenced by the lease token, so a
/// job that moved on meanwhile is left alone. Returns how many were released.
pub(super) async fn release_orphans(
    store: &Store,
    config: &WorkerConfig,
    running: &HashMap<i64, Running>,
    completer: &Completer,
) -> usize {
    let held = match store.leases_held_by(&config.worker_id).await {
        Ok(held) => held,
        Err(error) => {
            warn!(%error, "cannot look for orphaned leases; will look again");
            return 0;
        }
    };
    let mut released = 0;
    for lease in held {
        if running
            .get(&lease.job_id)
            .is_some_and(|job| job.lease == lease)
        {
            continue;
        }
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
    WorkerStats::add(&config.stats.orphans_released, released as u64);
    released
}

/// Takes back expired leases of any worker (cheap and idempotent: every worker runs it).
pub(super) async fn reap(store: &Store, config: &WorkerConfig) {
    match store.reap(1000).await {
        Ok(reaped) if !reaped.is_empty() => {
            WorkerStats::add(&config.stats.reaped, reaped.len() as u64);
            reaped
                .iter()
                .for_each(|job| config.metrics.lease_expired(job));
            info!(count = reaped.len(), "reaped expired leases");
        }
        Ok(_) => debug!("reaper: nothing expired"),
        Err(error) => {
            warn!(%error, "reaper failed; will retry");
            config
                .metrics
                .store_error(crate::metrics::StoreOperation::reap);
        }
    }
}
