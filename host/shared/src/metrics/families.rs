//! Every metric family of the process, declared once each: its field, its type, how it
//! is made, its Prometheus name and its help text, in one table ([`families!`]) that
//! builds the struct, its constructor and its registration.
//!
//! Owns: metric names, help texts and buckets. Must not: record anything (the methods on
//! `Metrics` do) or register a family anywhere but here.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::labels::{HttpBytesLabels, HttpLabels, OperationLabels, ViolationLabels};
use super::{HeldLabels, JobLabels, StateLabels};

pub(super) type JobCounters = Family<JobLabels, Counter>;
pub(super) type JobHistograms = Family<JobLabels, Histogram, fn() -> Histogram>;
pub(super) type FloatGauge = Gauge<f64, std::sync::atomic::AtomicU64>;

/// `field: Type = constructor, "name", "help";` for each family: the struct holds the
/// fields, `Families::new` makes them, `register` registers each under its name.
macro_rules! families {
    ($($(#[$doc:meta])* $field:ident: $ty:ty = $init:expr, $name:literal, $help:literal;)*) => {
        pub(super) struct Families {
            $($(#[$doc])* pub(super) $field: $ty,)*
        }

        impl Families {
            pub(super) fn new() -> Self {
                Families { $($field: $init,)* }
            }

            pub(super) fn register(&self, r: &mut Registry) {
                $(r.register($name, $help, self.$field.clone());)*
            }
        }
    };
}

families! {
    enqueued: JobCounters = JobCounters::default(),
        "sluice_jobs_enqueued",
        "Jobs created by this process's enqueue API (HTTP); SQL and CLI enqueues are not counted";
    completed: JobCounters = JobCounters::default(),
        "sluice_jobs_completed",
        "Jobs that completed";
    retried: JobCounters = JobCounters::default(),
        "sluice_jobs_retried",
        "Attempts that failed (or whose lease expired) with attempts left: the job was rescheduled";
    dead: JobCounters = JobCounters::default(),
        "sluice_jobs_dead",
        "Jobs that went to the dead letter (attempts used up, fatal error, or lease expired on the last attempt)";
    cancelled: JobCounters = JobCounters::default(),
        "sluice_jobs_cancelled",
        "Jobs cancelled by an operator (pending ones by the API, running ones by their worker)";
    released: JobCounters = JobCounters::default(),
        "sluice_jobs_released",
        "Claimed jobs given back without using an attempt (shutdown, infrastructure failure)";
    suspended: JobCounters = JobCounters::default(),
        "sluice_jobs_suspended",
        "Runs of durable jobs that suspended without using an attempt (a durable sleep, an awaited signal or jobs, a snooze)";
    journal_replayed: JobCounters = JobCounters::default(),
        "sluice_journal_replayed_calls",
        "Host calls of durable jobs answered from their journal (not performed again)";
    journal_recorded: JobCounters = JobCounters::default(),
        "sluice_journal_recorded_calls",
        "Host calls of durable jobs made live and journaled";
    follow_ups: JobCounters = JobCounters::default(),
        "sluice_follow_up_jobs",
        "Follow-up jobs written with their parent's completion, by the parent's tenant and type (one whose idempotency key was taken is counted, not created)";
    lease_expirations: JobCounters = JobCounters::default(),
        "sluice_lease_expirations",
        "Running jobs whose lease expired (their host died or stalled), taken back by this host's reaper";
    attempts_per_job: JobHistograms = JobHistograms::new_with_constructor(attempts_histogram),
        "sluice_job_attempts",
        "Attempts a job used, observed when it completes or dies";
    instantiate_seconds: JobHistograms = JobHistograms::new_with_constructor(instantiate_histogram),
        "sluice_sandbox_instantiate_seconds",
        "Time to instantiate a job's component from the cached pre-instance";
    duration_seconds: JobHistograms = JobHistograms::new_with_constructor(duration_histogram),
        "sluice_job_duration_seconds",
        "Wall-clock time of one attempt in the sandbox (instantiation and call)";
    fuel_used: JobHistograms = JobHistograms::new_with_constructor(fuel_histogram),
        "sluice_job_fuel_used",
        "Fuel (CPU units) one attempt consumed";
    http_requests: Family<HttpLabels, Counter> = Family::default(),
        "sluice_http_requests",
        "Outbound HTTP requests of attempts, by outcome (ok, denied, timeout, error)";
    webhook_responses: Family<HttpLabels, Counter> = Family::default(),
        "sluice_webhook_responses",
        "Answers to webhook deliveries by status class (outcome=2xx, 3xx, 4xx, 5xx)";
    http_request_seconds: JobHistograms = JobHistograms::new_with_constructor(duration_histogram),
        "sluice_http_request_duration_seconds",
        "From a guest's request to the response head (or the failure)";
    http_body_bytes: Family<HttpBytesLabels, Counter> = Family::default(),
        "sluice_http_body_bytes",
        "Outbound HTTP body bytes: request bodies sent (direction=out) and response bodies read (in)";
    limit_violations: Family<ViolationLabels, Counter> = Family::default(),
        "sluice_limit_violations",
        "Attempts stopped by a sandbox limit, by reason (timeout, fuel, memory, table, output, trap)";
    listener_fallbacks: Counter = Counter::default(),
        "sluice_worker_listener_fallbacks",
        "Times the worker lost (or could not open) its LISTEN connection and fell back to polling";
    listening: Gauge = Gauge::default(),
        "sluice_worker_listening",
        "1 while the worker's LISTEN connection is up, 0 while it polls";
    secrets_key_loaded: Gauge = Gauge::default(),
        "sluice_secrets_key_loaded",
        "1 when this worker holds a secrets key (SLUICE_SECRETS_KEY or --secrets-key-file), 0 when it does not: it then leaves job types granted secrets pending";
    orphans_released: Counter = Counter::default(),
        "sluice_worker_orphans_released",
        "Jobs this worker held in the database without running them (a lost claim reply, a dead attempt task), released by the orphan check";
    prefetch_depth: Gauge = Gauge::default(),
        "sluice_worker_prefetch_depth",
        "Jobs the worker aims to keep claimed ahead of its free slots (--prefetch auto sizes it from the completion rate and claim round trip; a fixed --prefetch shows that number)";
    prefetch_given_back: Counter = Counter::default(),
        "sluice_worker_prefetch_given_back",
        "Queued jobs given back unstarted because every slot stayed busy with long attempts (--prefetch auto), so another worker may start them";
    schedule_jobs_fired: Counter = Counter::default(),
        "sluice_scheduler_jobs_fired",
        "Jobs this host's scheduler enqueued from cron schedules";
    schedule_slots_skipped: Counter = Counter::default(),
        "sluice_scheduler_slots_skipped",
        "Due cron slots this host's scheduler skipped (catch-up policy, job type gone)";
    retention_jobs_deleted: Counter = Counter::default(),
        "sluice_retention_jobs_deleted",
        "Finished jobs this host's retention pruned";
    retention_slots_deleted: Counter = Counter::default(),
        "sluice_retention_schedule_slots_deleted",
        "Schedule slot records this host's retention pruned";
    outcomes_dropped: Counter = Counter::default(),
        "sluice_worker_outcomes_dropped",
        "Attempt outcomes not written (lease lost, or the database unreachable past the lease)";
    store_errors: Family<OperationLabels, Counter> = Family::default(),
        "sluice_worker_store_errors",
        "Failed store calls of the worker loop, by operation";
    trace_spans_exported: Counter = Counter::default(),
        "sluice_trace_spans_exported",
        "Spans this process exported over OTLP (docs/observability.md)";
    trace_spans_dropped: Counter = Counter::default(),
        "sluice_trace_spans_dropped",
        "Spans this process dropped: the export queue was full, or their export failed (the collector down, slow or refusing)";
    trace_exports_failed: Counter = Counter::default(),
        "sluice_trace_exports_failed",
        "OTLP exports that failed (connection, timeout or a non-2xx answer); their spans are dropped, not retried";
    attempts_in_progress: Gauge = Gauge::default(),
        "sluice_worker_attempts_in_progress",
        "Attempts this process is running now";
    label_overflow: Counter = Counter::default(),
        "sluice_metrics_label_overflow",
        "Observations recorded under tenant=\"_other\" because the label budget was full";
    // Refreshed from the database at scrape time (`queue_gauges`).
    queue_depth: Family<StateLabels, Gauge> = Family::default(),
        "sluice_queue_depth",
        "Jobs per state and job type (from the database at scrape time)";
    queue_ready: Family<JobLabels, Gauge> = Family::default(),
        "sluice_queue_ready",
        "Pending jobs that are due now, per job type (from the database at scrape time)";
    oldest_ready_age: Family<JobLabels, FloatGauge> = Family::default(),
        "sluice_queue_oldest_ready_age_seconds",
        "How long the oldest ready job of each job type has waited since its run_at (absent when none is ready)";
    queue_held: Family<HeldLabels, Gauge> = Family::default(),
        "sluice_queue_held",
        "Due jobs held back by a flow control (reason: paused, type_cap, key_cap, rate), per job type (from the database at scrape time)";
    lease_expirations_last_hour: Family<JobLabels, Gauge> = Family::default(),
        "sluice_queue_lease_expirations_last_hour",
        "Lease expirations recorded in the last hour by any host (from the database)";
    stats_up: Gauge = Gauge::default(),
        "sluice_queue_stats_up",
        "1 when the last refresh of the queue gauges from the database succeeded, else 0";
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
