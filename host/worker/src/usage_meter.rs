//! The usage meter (issue #40, docs/usage.md): adds up what each run used — fuel, wall
//! time, peak memory, outbound requests and bytes, payload, output and log bytes — per
//! tenant and job type, and writes the sums about once a second in one statement
//! (`Store::record_usage`), never a row per attempt. A daily fuel or egress quota reads
//! these sums, so it is enforced within about a second of the runs that reach it.
//!
//! Must not: decide or delay an attempt's end (the completer writes it; a meter that
//! cannot write keeps its sums and retries with the next batch), or enforce quotas (the
//! claim does).
//!
//! A worker that dies loses what it had not written yet (at most a second's worth):
//! metering is for reports and quotas, not for the queue's guarantees.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sluice_sandbox::{Outcome, RunReport};
use sluice_store::{Store, UsageCounts, UsageDelta};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::warn;

/// How often the sums are written while runs end.
const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// Sums by tenant, then job type: nested so that adding to a pair already seen looks it
/// up by `&str` and allocates nothing.
type Sums = HashMap<String, HashMap<String, UsageCounts>>;

/// Where attempts add what they used. Cheap to clone.
#[derive(Clone)]
pub(super) struct UsageMeter {
    sums: Arc<Mutex<Sums>>,
    stop: CancellationToken,
    flusher: Arc<Mutex<Option<JoinHandle<()>>>>,
}

/// What one run used, as the sandbox reported it, with the payload it was handed.
pub(super) fn counts_of(report: &RunReport, payload_bytes: usize) -> UsageCounts {
    let output_bytes = match &report.outcome {
        Outcome::Completed { output } => output.len(),
        Outcome::Failed(_) | Outcome::Suspended(_) => 0,
    };
    let int = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    UsageCounts {
        runs: 1,
        fuel: int(report.fuel_used),
        wall_ms: int(report.elapsed.as_millis().try_into().unwrap_or(u64::MAX)),
        peak_memory_bytes: int(report.peak_memory_bytes),
        http_requests: int(report.http.calls.len() as u64),
        http_bytes_out: int(report.http.bytes_out),
        http_bytes_in: int(report.http.bytes_in),
        payload_bytes: int(payload_bytes as u64),
        output_bytes: int(output_bytes as u64),
        log_bytes: int(report.logs.len() as u64),
    }
}

impl UsageMeter {
    /// Starts the writer of the sums.
    pub(super) fn start(store: Store) -> UsageMeter {
        let meter = UsageMeter {
            sums: Arc::default(),
            stop: CancellationToken::new(),
            flusher: Arc::default(),
        };
        let writer = meter.clone();
        let handle = tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = writer.stop.cancelled() => break,
                    _ = tokio::time::sleep(FLUSH_EVERY) => {}
                }
                writer.write(&store).await;
            }
            writer.write(&store).await;
        });
        *meter.flusher.lock().expect("usage meter lock") = Some(handle);
        meter
    }

    /// Adds what one run of `tenant`'s `job_type` used.
    pub(super) fn add(&self, tenant: &str, job_type: &str, counts: &UsageCounts) {
        let mut sums = self.sums.lock().expect("usage meter lock");
        if !sums.contains_key(tenant) {
            sums.insert(tenant.to_owned(), HashMap::new());
        }
        let of_tenant = sums.get_mut(tenant).expect("inserted above");
        match of_tenant.get_mut(job_type) {
            Some(sum) => sum.add(counts),
            None => {
                of_tenant.insert(job_type.to_owned(), counts.clone());
            }
        }
    }

    /// Writes what is left and stops the writer (the worker is stopping).
    pub(super) async fn close(&self) {
        self.stop.cancel();
        let handle = self.flusher.lock().expect("usage meter lock").take();
        if let Some(handle) = handle {
            let _ = handle.await;
        }
    }

    /// Writes the sums so far; on failure they are added back for the next write.
    async fn write(&self, store: &Store) {
        let taken = std::mem::take(&mut *self.sums.lock().expect("usage meter lock"));
        if taken.is_empty() {
            return;
        }
        let mut deltas: Vec<UsageDelta> = taken
            .into_iter()
            .flat_map(|(tenant, of_tenant)| {
                of_tenant
                    .into_iter()
                    .map(move |(job_type, counts)| UsageDelta {
                        tenant: tenant.clone(),
                        job_type,
                        counts,
                    })
            })
            .collect();
        deltas.sort_by(|a, b| (&a.tenant, &a.job_type).cmp(&(&b.tenant, &b.job_type)));
        if let Err(error) = store.record_usage(&deltas).await {
            warn!(%error, "cannot write metered usage; keeping it for the next write");
            for d in deltas {
                self.add(&d.tenant, &d.job_type, &d.counts);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_add_up_per_tenant_and_type_and_keep_the_largest_peak() {
        let sums: Arc<Mutex<Sums>> = Arc::default();
        let meter = UsageMeter {
            sums: sums.clone(),
            stop: CancellationToken::new(),
            flusher: Arc::default(),
        };
        let run = |fuel, peak| UsageCounts {
            runs: 1,
            fuel,
            peak_memory_bytes: peak,
            ..UsageCounts::default()
        };
        meter.add("a", "echo", &run(10, 100));
        meter.add("a", "echo", &run(5, 300));
        meter.add("b", "echo", &run(7, 50));
        let sums = sums.lock().unwrap();
        let a = &sums["a"]["echo"];
        assert_eq!((a.runs, a.fuel, a.peak_memory_bytes), (2, 15, 300));
        assert_eq!(sums["b"]["echo"].fuel, 7);
        assert_eq!(sums.values().map(HashMap::len).sum::<usize>(), 2);
    }
}
