//! Prometheus metrics: the registry, every metric family, the calls that record into them,
//! and (in `queue_gauges`) the queue gauges refreshed from the database; `sluice-http`
//! serves them at `GET /metrics`. `docs/metrics.md` lists every metric, its labels and what to alert on.
//!
//! Owns: the label budgets and what each recording call adds (the families themselves,
//! their names, help texts and buckets, are declared once in `families`). One [`Metrics`] per
//! process, cloned into whoever records (the worker, the HTTP API); the registry is built
//! once in [`Metrics::new`] and never changes shape. Must not: speak SQL (queue gauges
//! come from [`sluice_store::Store::stats`]), decide anything about jobs, or let label
//! values grow without bound (see `labels`).

mod families;
mod labels;
mod queue_gauges;
mod trace_export;

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::registry::Registry;
use sluice_sandbox::{Failure as SandboxFailure, Outcome, RunReport};
use sluice_store::{AttemptOutcome, JobState, ReapedJob};

pub use labels::{
    DEFAULT_MAX_LABEL_SETS, HeldLabels, JobLabels, LimitReason, OTHER, StateLabels, StoreOperation,
};
pub use queue_gauges::DEFAULT_STATS_TTL;

use families::Families;
use labels::{HttpBytesLabels, HttpLabels, LabelBudget, OperationLabels, ViolationLabels};

/// Handle to the process's metrics. Cheap to clone; every clone records into the same
/// registry.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

struct Inner {
    registry: Registry,
    budget: LabelBudget,
    stats_ttl: Duration,
    /// When the queue gauges were last refreshed (single flight: scrapes queue here).
    refreshed: tokio::sync::Mutex<Option<tokio::time::Instant>>,
    families: Families,
    /// The tracer whose export counts are read at each scrape (`trace_export`).
    traces: trace_export::Watched,
}

impl Metrics {
    /// A registry with every Sluice metric, admitting [`DEFAULT_MAX_LABEL_SETS`] (tenant,
    /// job type) pairs and caching queue gauges for [`DEFAULT_STATS_TTL`].
    pub fn new() -> Self {
        Metrics::with_limits(DEFAULT_MAX_LABEL_SETS, DEFAULT_STATS_TTL)
    }

    /// Like [`Metrics::new`] with another label budget and queue-gauge cache lifetime.
    pub fn with_limits(max_label_sets: usize, stats_ttl: Duration) -> Self {
        let families = Families::new();
        let mut registry = Registry::default();
        families.register(&mut registry);
        Metrics {
            inner: Arc::new(Inner {
                registry,
                budget: LabelBudget::new(max_label_sets),
                stats_ttl,
                refreshed: tokio::sync::Mutex::new(None),
                families,
                traces: trace_export::Watched::default(),
            }),
        }
    }

    /// Every metric in the Prometheus text format (version 0.0.4).
    pub fn encode(&self) -> String {
        self.read_trace_counts();
        let mut text = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut text, &self.inner.registry)
            .expect("writing to a String cannot fail");
        text
    }

    fn labels(&self, tenant: &str, job_type: &str) -> JobLabels {
        let (labels, folded) = self.inner.budget.labels(tenant, job_type);
        if folded {
            self.inner.families.label_overflow.inc();
        }
        labels
    }

    fn f(&self) -> &Families {
        &self.inner.families
    }

    /// A job was created through this process's API (call only when it was created, not
    /// for a duplicate idempotency key).
    pub fn job_enqueued(&self, tenant: &str, job_type: &str) {
        self.f()
            .enqueued
            .get_or_create(&self.labels(tenant, job_type))
            .inc();
    }

    /// An operator cancelled a pending job (`CancelResult::Cancelled`). A running job's
    /// cancellation is counted by the worker that stops it.
    pub fn job_cancelled(&self, tenant: &str, job_type: &str) {
        self.f()
            .cancelled
            .get_or_create(&self.labels(tenant, job_type))
            .inc();
    }

    /// An attempt starts; the returned guard marks it finished when dropped.
    pub fn attempt_started(&self) -> InProgress {
        self.f().attempts_in_progress.inc();
        InProgress {
            metrics: self.clone(),
        }
    }

    /// What the sandbox reported for one attempt: instantiate time, duration, fuel, and
    /// the limit it hit, if any.
    pub fn sandbox_ran(&self, tenant: &str, job_type: &str, report: &RunReport) {
        let labels = self.labels(tenant, job_type);
        let f = self.f();
        f.instantiate_seconds
            .get_or_create(&labels)
            .observe(report.instantiate_time.as_secs_f64());
        f.duration_seconds
            .get_or_create(&labels)
            .observe(report.elapsed.as_secs_f64());
        f.fuel_used
            .get_or_create(&labels)
            .observe(report.fuel_used as f64);
        if let Outcome::Failed(failure) = &report.outcome
            && let Some(reason) = limit_reason(failure)
        {
            f.limit_violations
                .get_or_create(&ViolationLabels {
                    tenant: labels.tenant.clone(),
                    job_type: labels.job_type.clone(),
                    reason,
                })
                .inc();
        }
        if let Some(journal) = report.journal {
            if journal.replayed > 0 {
                f.journal_replayed
                    .get_or_create(&labels)
                    .inc_by(u64::from(journal.replayed));
            }
            if journal.recorded > 0 {
                f.journal_recorded
                    .get_or_create(&labels)
                    .inc_by(u64::from(journal.recorded));
            }
        }
        let http = &report.http;
        for call in &http.calls {
            f.http_requests
                .get_or_create(&HttpLabels {
                    tenant: labels.tenant.clone(),
                    job_type: labels.job_type.clone(),
                    outcome: call.outcome.to_owned(),
                })
                .inc();
            f.http_request_seconds
                .get_or_create(&labels)
                .observe(call.duration.as_secs_f64());
        }
        for (direction, bytes) in [("out", http.bytes_out), ("in", http.bytes_in)] {
            if bytes > 0 {
                f.http_body_bytes
                    .get_or_create(&HttpBytesLabels {
                        tenant: labels.tenant.clone(),
                        job_type: labels.job_type.clone(),
                        direction: direction.to_owned(),
                    })
                    .inc_by(bytes);
            }
        }
    }

    /// Where attempt number `attempt` of a job went, as the store reported it when the
    /// worker recorded it; `None`: the outcome was dropped (lease lost, database gone).
    pub fn attempt_recorded(
        &self,
        tenant: &str,
        job_type: &str,
        attempt: i32,
        recorded: Option<AttemptOutcome>,
    ) {
        let f = self.f();
        let Some(outcome) = recorded else {
            f.outcomes_dropped.inc();
            return;
        };
        let labels = self.labels(tenant, job_type);
        let counter = match outcome {
            AttemptOutcome::Completed => &f.completed,
            AttemptOutcome::Retry => &f.retried,
            AttemptOutcome::Dead => &f.dead,
            AttemptOutcome::Cancelled => &f.cancelled,
            AttemptOutcome::Released => &f.released,
            AttemptOutcome::Suspended => &f.suspended,
            AttemptOutcome::LeaseExpired => &f.lease_expirations,
        };
        counter.get_or_create(&labels).inc();
        if matches!(outcome, AttemptOutcome::Completed | AttemptOutcome::Dead) {
            f.attempts_per_job
                .get_or_create(&labels)
                .observe(f64::from(attempt.max(0)));
        }
    }

    /// A completion of a `tenant`/`job_type` job was written with `count` follow-up jobs.
    pub fn follow_ups_written(&self, tenant: &str, job_type: &str, count: usize) {
        if count > 0 {
            let labels = self.labels(tenant, job_type);
            self.f()
                .follow_ups
                .get_or_create(&labels)
                .inc_by(count as u64);
        }
    }

    /// A webhook delivery's request: counted in `sluice_http_requests` and its duration
    /// histogram under job type `sluice.webhook` (outcome ok, denied, timeout, error),
    /// and, when an answer came, in `sluice_webhook_responses` by status class.
    pub fn webhook_sent(
        &self,
        tenant: &str,
        outcome: &str,
        status: Option<u16>,
        duration: Duration,
    ) {
        let labels = self.labels(tenant, sluice_store::WEBHOOK_JOB_TYPE);
        let f = self.f();
        let with = |outcome: String| HttpLabels {
            tenant: labels.tenant.clone(),
            job_type: labels.job_type.clone(),
            outcome,
        };
        f.http_requests
            .get_or_create(&with(outcome.to_owned()))
            .inc();
        f.http_request_seconds
            .get_or_create(&labels)
            .observe(duration.as_secs_f64());
        if let Some(status) = status {
            f.webhook_responses
                .get_or_create(&with(format!("{}xx", status / 100)))
                .inc();
        }
    }

    /// The reaper took back a job whose lease expired.
    pub fn lease_expired(&self, job: &ReapedJob) {
        let labels = self.labels(&job.tenant, &job.job_type);
        let f = self.f();
        f.lease_expirations.get_or_create(&labels).inc();
        match job.state {
            JobState::Pending => f.retried.get_or_create(&labels).inc(),
            JobState::Dead => {
                f.attempts_per_job
                    .get_or_create(&labels)
                    .observe(f64::from(job.attempt.max(0)));
                f.dead.get_or_create(&labels).inc()
            }
            JobState::Cancelled => f.cancelled.get_or_create(&labels).inc(),
            JobState::Running | JobState::Waiting | JobState::Completed => 0,
        };
    }

    /// The worker lost (or never got) its LISTEN connection and polls instead.
    pub fn listener_fallback(&self) {
        self.f().listener_fallbacks.inc();
    }

    /// Whether the worker's LISTEN connection is up.
    pub fn listening(&self, up: bool) {
        self.f().listening.set(i64::from(up));
    }

    /// Whether this worker holds a secrets key.
    pub fn secrets_key_loaded(&self, loaded: bool) {
        self.f().secrets_key_loaded.set(i64::from(loaded));
    }

    /// The orphan check released this many jobs.
    pub fn orphans_released(&self, count: usize) {
        self.f().orphans_released.inc_by(count as u64);
    }

    /// The prefetch queue depth the worker aims for now.
    pub fn prefetch_depth(&self, depth: usize) {
        self.f().prefetch_depth.set(depth as i64);
    }

    /// A stalled prefetch queue gave `count` jobs back.
    pub fn prefetch_given_back(&self, count: usize) {
        self.f().prefetch_given_back.inc_by(count as u64);
    }

    /// One scheduler pass enqueued `fired` jobs and skipped `skipped` due slots.
    pub fn schedules_fired(&self, fired: u64, skipped: u64) {
        self.f().schedule_jobs_fired.inc_by(fired);
        self.f().schedule_slots_skipped.inc_by(skipped);
    }

    /// One retention run deleted this many jobs and schedule slot records.
    pub fn retention_pruned(&self, jobs: u64, schedule_slots: u64) {
        self.f().retention_jobs_deleted.inc_by(jobs);
        self.f().retention_slots_deleted.inc_by(schedule_slots);
    }

    /// A store call of the worker loop failed (it will be tried again).
    pub fn store_error(&self, operation: StoreOperation) {
        self.f()
            .store_errors
            .get_or_create(&OperationLabels { operation })
            .inc();
    }
}

/// Counts one running attempt in `sluice_worker_attempts_in_progress` while it lives.
pub struct InProgress {
    metrics: Metrics,
}

impl Drop for InProgress {
    fn drop(&mut self) {
        self.metrics.f().attempts_in_progress.dec();
    }
}

/// The limit a sandbox failure names, if it is a limit (guest errors, cancellation and
/// host failures are not).
pub fn limit_reason(failure: &SandboxFailure) -> Option<LimitReason> {
    Some(match failure {
        SandboxFailure::Timeout(_) => LimitReason::timeout,
        SandboxFailure::FuelExhausted(_) => LimitReason::fuel,
        SandboxFailure::MemoryLimit(_) => LimitReason::memory,
        SandboxFailure::TableLimit(_) => LimitReason::table,
        SandboxFailure::OutputTooLarge(_) => LimitReason::output,
        SandboxFailure::Trap(_) => LimitReason::trap,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reaped(tenant: &str, state: JobState, attempt: i32) -> ReapedJob {
        ReapedJob {
            id: 1,
            tenant: tenant.into(),
            job_type: "mail".into(),
            state,
            attempt,
            max_attempts: 3,
            worker: "w".into(),
            locked_until: chrono::Utc::now(),
            error: "lease expired".into(),
        }
    }

    fn has_line(text: &str, line: &str) -> bool {
        text.lines().any(|l| l == line)
    }

    #[test]
    fn reaped_jobs_count_as_lease_expirations_and_by_the_state_they_went_to() {
        let metrics = Metrics::new();
        metrics.lease_expired(&reaped("acme", JobState::Pending, 1));
        metrics.lease_expired(&reaped("acme", JobState::Dead, 3));
        let text = metrics.encode();
        let series = "{tenant=\"acme\",job_type=\"mail\"}";
        for line in [
            format!("sluice_lease_expirations_total{series} 2"),
            format!("sluice_jobs_retried_total{series} 1"),
            format!("sluice_jobs_dead_total{series} 1"),
            format!("sluice_job_attempts_sum{series} 3.0"),
        ] {
            assert!(has_line(&text, &line), "missing {line:?} in\n{text}");
        }
    }

    #[test]
    fn pairs_over_the_label_budget_are_recorded_under_other_and_counted() {
        let metrics = Metrics::with_limits(1, DEFAULT_STATS_TTL);
        let completed = Some(AttemptOutcome::Completed);
        metrics.attempt_recorded("acme", "mail", 1, completed);
        metrics.attempt_recorded("globex", "mail", 1, completed);
        metrics.attempt_recorded("initech", "fax", 2, completed);
        metrics.attempt_recorded("acme", "mail", 1, None);
        let text = metrics.encode();
        for line in [
            "sluice_jobs_completed_total{tenant=\"acme\",job_type=\"mail\"} 1",
            "sluice_jobs_completed_total{tenant=\"_other\",job_type=\"_other\"} 2",
            "sluice_metrics_label_overflow_total 2",
            "sluice_worker_outcomes_dropped_total 1",
        ] {
            assert!(has_line(&text, line), "missing {line:?} in\n{text}");
        }
        assert!(
            !text.contains("globex") && !text.contains("initech"),
            "{text}"
        );
    }
}
