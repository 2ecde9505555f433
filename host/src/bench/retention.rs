//! `sluice bench retention`: one retention pass, timed, through the same store call the
//! worker's retention service makes (`Store::prune_if_due`: the advisory lock, the
//! guarded run record, then the bounded prune batches). `scripts/db-cpu` uses it to
//! bracket the retention phase of a job's life.
//!
//! Owns timing and reporting only; what is pruned, and how, belongs to the store.

use std::time::{Duration, Instant};

use anyhow::bail;
use serde_json::json;
use sluice_store::{MaintenanceRun, RetentionPolicy, Store};
use sluice_worker::services::retention::RetentionConfig;

/// Runs one pass with the default policy and batch size, keeping completed jobs for
/// `retain_completed` if given (the policy's default otherwise).
pub async fn prune_once(
    store: &Store,
    retain_completed: Option<Duration>,
) -> anyhow::Result<serde_json::Value> {
    let mut policy = RetentionPolicy::default();
    if let Some(keep) = retain_completed {
        policy.completed = keep;
    }
    let started = Instant::now();
    let run = store
        .prune_if_due(&policy, RetentionConfig::DEFAULT_INTERVAL, "bench")
        .await?;
    let seconds = started.elapsed().as_secs_f64();
    let report = match run {
        MaintenanceRun::Ran(report) => report,
        MaintenanceRun::NotDue => bail!(
            "retention did not run: a pass started less than {} ago in this database \
             (sluice.maintenance_runs); run it on a fresh database, or after that interval",
            humantime::format_duration(RetentionConfig::DEFAULT_INTERVAL)
        ),
        MaintenanceRun::Busy => {
            bail!("retention did not run: another host is pruning this database right now")
        }
    };
    let deleted = report.jobs.deleted;
    eprintln!(
        "retention: {deleted} jobs deleted in {} batches",
        report.jobs.batches
    );
    Ok(json!({
        "cmd": "retention", "deleted": deleted, "batches": report.jobs.batches,
        "batch_size": policy.batch_size, "seconds": seconds,
        "jobs_per_s": deleted as f64 / seconds,
    }))
}
