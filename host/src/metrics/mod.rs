//! Prometheus metrics: the registry, every metric family, the calls that record into them,
//! and (in `scrape`) the `GET /metrics` endpoint that also refreshes the queue gauges from
//! the database. `docs/metrics.md` lists every metric, its labels and what to alert on.
//!
//! Owns: metric names, help texts, buckets and label budgets. One [`Metrics`] per
//! process, cloned into whoever records (the worker, the HTTP API); the registry is built
//! once in [`Metrics::new`] and never changes shape. Must not: speak SQL (queue gauges
//! come from [`sluice_store::Store::stats`]), decide anything about jobs, or let label
//! values grow without bound (see `labels`).

mod labels;
mod scrape;

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use sluice_sandbox::{Failure as SandboxFailure, Outcome, RunReport};
use sluice_store::{AttemptOutcome, JobState, ReapedJob};

pub use labels::{
    DEFAULT_MAX_LABEL_SETS, JobLabels, LimitReason, OTHER, StateLabels, StoreOperation,
};
pub use scrape::{DEFAULT_STATS_TTL, router, serve};

use labels::{HttpBytesLabels, HttpLabels, LabelBudget, OperationLabels, ViolationLabels};

type JobCounters = Family<JobLabels, Counter>;
type JobHistograms = Family<JobLabels, Histogram, fn() -> Histogram>;
type FloatGauge = Gauge<f64, std::sync::atomic::AtomicU64>;

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
}

struct Families {
    enqueued: JobCounters,
    completed: JobCounters,
    retried: JobCounters,
    dead: JobCounters,
    cancelled: JobCounters,
    released: JobCounters,
    lease_expirations: JobCounters,
    follow_ups: JobCounters,
    attempts_per_job: JobHistograms,
    instantiate_seconds: JobHistograms,
    duration_seconds: JobHistograms,
    fuel_used: JobHistograms,
    limit_violations: Family<ViolationLabels, Counter>,
    http_requests: Family<HttpLabels, Counter>,
    webhook_responses: Family<HttpLabels, Counter>,
    http_request_seconds: JobHistograms,
    http_body_bytes: Family<HttpBytesLabels, Counter>,
    listener_fallbacks: Counter,
    listening: Gauge,
    secrets_key_loaded: Gauge,
    orphans_released: Counter,
    prefetch_depth: Gauge,
    prefetch_given_back: Counter,
    schedule_jobs_fired: Counter,
    schedule_slots_skipped: Counter,
    retention_jobs_deleted: Counter,
    retention_slots_deleted: Counter,
    outcomes_dropped: Counter,
    store_errors: Family<OperationLabels, Counter>,
    attempts_in_progress: Gauge,
    label_overflow: Counter,
    // Refreshed from the database at scrape time.
    queue_depth: Family<StateLabels, Gauge>,
    queue_ready: Family<JobLabels, Gauge>,
    oldest_ready_age: Family<JobLabels, FloatGauge>,
    lease_expirations_last_hour: Family<JobLabels, Gauge>,
    stats_up: Gauge,
}

fn attempts_histogram() -> Histogram {
    Histogram::new([1.0, 2.0, 3.0, 4.0, 5.0, 7.0, 10.0, 15.0, 20.0, 50.0])
}

fn instantiate_histogram() -> Histogram {
    // 50 µs .. ~0.8 s
    Histogram::new(exponential_buckets(0.000_05, 2.5, 11))
}

fn duration_histogram() -> Histogram {
    Histogram::new([
        0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0,
    ])
}

fn fuel_histogram() -> Histogram {
    // 100 000 .. 10^12 units
    Histogram::new(exponential_buckets(1e5, 10.0, 8))
}

impl Families {
    fn new() -> Self {
        Families {
            enqueued: JobCounters::default(),
            completed: JobCounters::default(),
            retried: JobCounters::default(),
            dead: JobCounters::default(),
            cancelled: JobCounters::default(),
            released: JobCounters::default(),
            lease_expirations: JobCounters::default(),
            follow_ups: JobCounters::default(),
            attempts_per_job: JobHistograms::new_with_constructor(attempts_histogram),
            instantiate_seconds: JobHistograms::new_with_constructor(instantiate_histogram),
            duration_seconds: JobHistograms::new_with_constructor(duration_histogram),
            fuel_used: JobHistograms::new_with_constructor(fuel_histogram),
            limit_violations: Family::default(),
            http_requests: Family::default(),
            webhook_responses: Family::default(),
            http_request_seconds: JobHistograms::new_with_constructor(duration_histogram),
            http_body_bytes: Family::default(),
            listener_fallbacks: Counter::default(),
            listening: Gauge::default(),
            secrets_key_loaded: Gauge::default(),
            orphans_released: Counter::default(),
            prefetch_depth: Gauge::default(),
            prefetch_given_back: Counter::default(),
            schedule_jobs_fired: Counter::default(),
            schedule_slots_skipped: Counter::default(),
            retention_jobs_deleted: Counter::default(),
            retention_slots_deleted: Counter::default(),
            outcomes_dropped: Counter::default(),
            store_errors: Family::default(),
            attempts_in_progress: Gauge::default(),
            label_overflow: Counter::default(),
            queue_depth: Family::default(),
            queue_ready: Family::default(),
            oldest_ready_age: Family::default(),
            lease_expirations_last_hour: Family::default(),
            stats_up: Gauge::default(),
        }
    }

    fn register(&self, r: &mut Registry) {
        let f = self;
        r.register("sluice_jobs_enqueued", "Jobs created by this process's enqueue API (HTTP); SQL and CLI enqueues are not counted", f.enqueued.clone());
        r.register(
            "sluice_jobs_completed",
            "Jobs that completed",
            f.completed.clone(),
        );
        r.register("sluice_jobs_retried", "Attempts that failed (or whose lease expired) with attempts left: the job was rescheduled", f.retried.clone());
        r.register("sluice_jobs_dead", "Jobs that went to the dead letter (attempts used up, fatal error, or lease expired on the last attempt)", f.dead.clone());
        r.register(
            "sluice_jobs_cancelled",
            "Jobs cancelled by an operator (pending ones by the API, running ones by their worker)",
            f.cancelled.clone(),
        );
        r.register(
            "sluice_jobs_released",
            "Claimed jobs given back without using an attempt (shutdown, infrastructure failure)",
            f.released.clone(),
        );
        r.register("sluice_follow_up_jobs", "Follow-up jobs written with their parent's completion, by the parent's tenant and type (one whose idempotency key was taken is counted, not created)", f.follow_ups.clone());
        r.register("sluice_lease_expirations", "Running jobs whose lease expired (their host died or stalled), taken back by this host's reaper", f.lease_expirations.clone());
        r.register(
            "sluice_job_attempts",
            "Attempts a job used, observed when it completes or dies",
            f.attempts_per_job.clone(),
        );
        r.register(
            "sluice_sandbox_instantiate_seconds",
            "Time to instantiate a job's component from the cached pre-instance",
            f.instantiate_seconds.clone(),
        );
        r.register(
            "sluice_job_duration_seconds",
            "Wall-clock time of one attempt in the sandbox (instantiation and call)",
            f.duration_seconds.clone(),
        );
        r.register(
            "sluice_job_fuel_used",
            "Fuel (CPU units) one attempt consumed",
            f.fuel_used.clone(),
        );
        r.register(
            "sluice_http_requests",
            "Outbound HTTP requests of attempts, by outcome (ok, denied, timeout, error)",
            f.http_requests.clone(),
        );
        r.register(
            "sluice_webhook_responses",
            "Answers to webhook deliveries by status class (outcome=2xx, 3xx, 4xx, 5xx)",
            f.webhook_responses.clone(),
        );
        r.register(
            "sluice_http_request_duration_seconds",
            "From a guest's request to the response head (or the failure)",
            f.http_request_seconds.clone(),
        );
        r.register("sluice_http_body_bytes", "Outbound HTTP body bytes: request bodies sent (direction=out) and response bodies read (in)", f.http_body_bytes.clone());
        r.register("sluice_limit_violations", "Attempts stopped by a sandbox limit, by reason (timeout, fuel, memory, table, output, trap)", f.limit_violations.clone());
        r.register("sluice_worker_listener_fallbacks", "Times the worker lost (or could not open) its LISTEN connection and fell back to polling", f.listener_fallbacks.clone());
        r.register(
            "sluice_worker_listening",
            "1 while the worker's LISTEN connection is up, 0 while it polls",
            f.listening.clone(),
        );
        r.register(
            "sluice_secrets_key_loaded",
            "1 when this worker holds a secrets key (SLUICE_SECRETS_KEY or --secrets-key-file), 0 when it does not: it then leaves job types granted secrets pending",
            f.secrets_key_loaded.clone(),
        );
        r.register(
            "sluice_worker_orphans_released",
            "Jobs this worker held in the database without running them (a lost claim reply, a dead attempt task), released by the orphan check",
            f.orphans_released.clone(),
        );
        r.register("sluice_worker_prefetch_depth", "Jobs the worker aims to keep claimed ahead of its free slots (--prefetch auto sizes it from the completion rate and claim round trip; a fixed --prefetch shows that number)", f.prefetch_depth.clone());
        r.register("sluice_worker_prefetch_given_back", "Queued jobs given back unstarted because every slot stayed busy with long attempts (--prefetch auto), so another worker may start them", f.prefetch_given_back.clone());
        r.register(
            "sluice_scheduler_jobs_fired",
            "Jobs this host's scheduler enqueued from cron schedules",
            f.schedule_jobs_fired.clone(),
        );
        r.register(
            "sluice_scheduler_slots_skipped",
            "Due cron slots this host's scheduler skipped (catch-up policy, job type gone)",
            f.schedule_slots_skipped.clone(),
        );
        r.register(
            "sluice_retention_jobs_deleted",
            "Finished jobs this host's retention pruned",
            f.retention_jobs_deleted.clone(),
        );
        r.register(
            "sluice_retention_schedule_slots_deleted",
            "Schedule slot records this host's retention pruned",
            f.retention_slots_deleted.clone(),
        );
        r.register(
            "sluice_worker_outcomes_dropped",
            "Attempt outcomes not written (lease lost, or the database unreachable past the lease)",
            f.outcomes_dropped.clone(),
        );
        r.register(
            "sluice_worker_store_errors",
            "Failed store calls of the worker loop, by operation",
            f.store_errors.clone(),
        );
        r.register(
            "sluice_worker_attempts_in_progress",
            "Attempts this process is running now",
            f.attempts_in_progress.clone(),
        );
        r.register(
            "sluice_metrics_label_overflow",
            "Observations recorded under tenant=\"_other\" because the label budget was full",
            f.label_overflow.clone(),
        );
        r.register(
            "sluice_queue_depth",
            "Jobs per state and job type (from the database at scrape time)",
            f.queue_depth.clone(),
        );
        r.register(
            "sluice_queue_ready",
            "Pending jobs that are due now, per job type (from the database at scrape time)",
            f.queue_ready.clone(),
        );
        r.register("sluice_queue_oldest_ready_age_seconds", "How long the oldest ready job of each job type has waited since its run_at (absent when none is ready)", f.oldest_ready_age.clone());
        r.register(
            "sluice_queue_lease_expirations_last_hour",
            "Lease expirations recorded in the last hour by any host (from the database)",
            f.lease_expirations_last_hour.clone(),
        );
        r.register(
            "sluice_queue_stats_up",
            "1 when the last refresh of the queue gauges from the database succeeded, else 0",
            f.stats_up.clone(),
        );
    }
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
            }),
        }
    }

    /// Every metric in the Prometheus text format (version 0.0.4).
    pub fn encode(&self) -> String {
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
            JobState::Running | JobState::Completed => 0,
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
