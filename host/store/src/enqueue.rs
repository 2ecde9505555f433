//! Enqueue: one job or many, in one round-trip, with idempotency keys.
//!
//! Owns: the Rust side of making jobs pending: validation, folding repeated keys of a
//! batch, and retrying rows whose key holder committed mid-statement. The INSERT and the
//! `sluice_jobs` notification are `sluice.enqueue_jobs(...)` (migration 0011), which
//! `sluice.enqueue(...)` and the scheduler call too.
//! Must not: write anything when any row of a batch is invalid, or decide duplicates in
//! Rust — the unique index `jobs_idempotency_key_uidx` is the authority (Rust only folds
//! repeats of one key inside a single batch, which one statement cannot see).

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::trace_headers::{TraceHeaders, check_traceparent};
use crate::types::KeyScope;
use crate::validate::{validate_job_type_name, validate_tenant_id};
use crate::{Store, StoreError, text, time_range};

/// When a job becomes due.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RunAt {
    /// Now (database time).
    #[default]
    Now,
    /// This long after now (database time).
    Delay(Duration),
    /// At this instant.
    At(DateTime<Utc>),
}

/// A job to enqueue. Build with [`NewJob::new`] and the `with_*` methods.
#[derive(Clone, Debug, PartialEq)]
pub struct NewJob {
    /// The tenant that will own the job; must exist.
    pub tenant: String,
    /// A job type registered for the tenant; it picks the component and limits at claim
    /// time.
    pub job_type: String,
    /// Opaque bytes (JSON by convention); at most the tenant's `max_payload_bytes`
    /// (default 1 MiB).
    pub payload: Vec<u8>,
    /// Higher runs first; must fit an `i16`. See [`crate::priority`].
    pub priority: i32,
    /// When it becomes due; [`RunAt::Now`] by default.
    pub run_at: RunAt,
    /// `None` takes the job type's `max_attempts`.
    pub max_attempts: Option<i32>,
    /// A duplicate key (per tenant) returns the existing job and creates nothing.
    pub idempotency_key: Option<String>,
    /// How long `idempotency_key` stays taken; ignored without a key.
    pub key_scope: KeyScope,
    /// The job whose successful attempt made this one (follow-up jobs only; set by
    /// [`Store::complete_many`], which derives it from the lease).
    pub parent: Option<Parent>,
    /// At most the type's `max_running_per_key` jobs with the same (tenant, type, key)
    /// run at once, fleet-wide (docs/flow-control.md); 1 to 255 characters.
    pub concurrency_key: Option<String>,
    /// The job's id when it was reserved beforehand (`Store::reserve_job_ids`: a
    /// follow-up job whose id the guest got when it asked); `None` draws a new one.
    pub id: Option<i64>,
    /// The W3C trace context the job continues (docs/observability.md): its attempts
    /// are spans of that trace. Checked by [`NewJob::validate`].
    pub trace: Option<TraceHeaders>,
}

/// Where a follow-up job came from: its parent job and its place (0, 1, ...) among the
/// jobs the parent's successful attempt asked for. Unique per job (`jobs_parent_uidx`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parent {
    /// The parent job's id.
    pub id: i64,
    /// Its place among the parent's follow-ups, from 0, in the order the attempt asked.
    pub seq: i32,
}

impl NewJob {
    /// A job due now at medium priority with the job type's attempts and no key.
    pub fn new(
        tenant: impl Into<String>,
        job_type: impl Into<String>,
        payload: impl Into<Vec<u8>>,
    ) -> Self {
        NewJob {
            tenant: tenant.into(),
            job_type: job_type.into(),
            payload: payload.into(),
            priority: crate::priority::MEDIUM,
            run_at: RunAt::Now,
            max_attempts: None,
            idempotency_key: None,
            key_scope: KeyScope::Retained,
            parent: None,
            concurrency_key: None,
            id: None,
            trace: None,
        }
    }

    /// Sets the trace context the job continues.
    pub fn with_trace(mut self, trace: TraceHeaders) -> Self {
        self.trace = Some(trace);
        self
    }

    /// Sets the job's concurrency key (docs/flow-control.md).
    pub fn with_concurrency_key(mut self, key: impl Into<String>) -> Self {
        self.concurrency_key = Some(key.into());
        self
    }

    /// Sets the priority (see [`crate::priority`]; must fit an `i16`).
    pub fn with_priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    /// Sets when the job becomes due.
    pub fn with_run_at(mut self, run_at: RunAt) -> Self {
        self.run_at = run_at;
        self
    }

    /// Overrides the job type's attempts (at least 1; 1 means never retried).
    pub fn with_max_attempts(mut self, max_attempts: i32) -> Self {
        self.max_attempts = Some(max_attempts);
        self
    }

    /// Makes the enqueue idempotent on `key` (per tenant) for as long as `scope` says.
    pub fn with_idempotency_key(mut self, key: impl Into<String>, scope: KeyScope) -> Self {
        self.idempotency_key = Some(key.into());
        self.key_scope = scope;
        self
    }
}

/// Result of enqueueing one job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Enqueued {
    /// The job's id: the new one, or the job that holds the idempotency key.
    pub id: i64,
    /// False when the idempotency key was taken: `id` is the job holding it.
    pub created: bool,
}

/// How many times rows whose key holder was invisible to the statement's snapshot (it
/// committed during the statement) are retried before giving up.
const MAX_KEY_ROUNDS: usize = 16;

/// The batch, through `sluice.enqueue_jobs(...)` (migration 0011): the one INSERT of new
/// jobs, shared with `sluice.enqueue(...)` and the scheduler (see the file's header).
const ENQUEUE_JOBS: &str = include_str!("../sql/enqueue/enqueue_jobs.sql");
/// The same with concurrency keys (migration 0024), for batches that carry one.
const ENQUEUE_KEYED_JOBS: &str = include_str!("../sql/enqueue/enqueue_keyed_jobs.sql");
/// The same with reserved ids (migration 0027), for batches that carry one.
const ENQUEUE_RESERVED_JOBS: &str = include_str!("../sql/enqueue/enqueue_reserved_jobs.sql");
/// The same with trace context (migration 0034), for batches that carry one.
const ENQUEUE_TRACED_JOBS: &str = include_str!("../sql/enqueue/enqueue_traced_jobs.sql");

/// The single result row of `sluice.enqueue_jobs(...)`.
#[derive(sqlx::FromRow)]
struct EnqueueRow {
    problem: Option<String>,
    problem_ord: Option<i64>,
    payload_size: Option<i64>,
    payload_limit: Option<i64>,
    /// One id per input row, in input order (NULL when there was a problem).
    ids: Option<Vec<i64>>,
    /// Input rows (1-based) whose key was taken, and the job holding it (NULL: unknown
    /// yet, retry).
    dup_ords: Option<Vec<i64>>,
    dup_holders: Option<Vec<Option<i64>>>,
}

impl NewJob {
    /// Checks what can be checked without the database (names, priority range, attempts,
    /// key length, due time). Malformed tenant ids cannot exist, so they are reported as
    /// unknown tenants. Every enqueue runs it; a follow-up job is checked when the guest
    /// asks for it too.
    pub fn validate(&self) -> Result<(), StoreError> {
        validate(self)
    }
}

fn validate(job: &NewJob) -> Result<(), StoreError> {
    validate_tenant_id(&job.tenant).map_err(|_| StoreError::UnknownTenant(job.tenant.clone()))?;
    validate_job_type_name(&job.job_type)?;
    if i16::try_from(job.priority).is_err() {
        return Err(StoreError::InvalidInput {
            field: "priority",
            message: format!(
                "{} is outside {}..={}; use the labels low=0, medium=10, high=20, critical=30",
                job.priority,
                i16::MIN,
                i16::MAX
            ),
        });
    }
    if let Some(n) = job.max_attempts
        && n < 1
    {
        return Err(StoreError::InvalidInput {
            field: "max_attempts",
            message: format!("must be at least 1 (1 means never retried), got {n}"),
        });
    }
    if let Some(key) = &job.idempotency_key {
        let n = key.chars().count();
        if n == 0 || n > 255 {
            return Err(StoreError::InvalidInput {
                field: "idempotency_key",
                message: format!("must be 1 to 255 characters, got {n}"),
            });
        }
        text::check("idempotency_key", key)?;
    }
    if let Some(key) = &job.concurrency_key {
        let n = key.chars().count();
        if n == 0 || n > 255 {
            return Err(StoreError::InvalidInput {
                field: "concurrency_key",
                message: format!("must be 1 to 255 characters, got {n}"),
            });
        }
        text::check("concurrency_key", key)?;
    }
    if let Some(trace) = &job.trace {
        check_traceparent(&trace.traceparent)?;
    }
    if let Some(id) = job.id
        && id < 1
    {
        return Err(StoreError::InvalidInput {
            field: "id",
            message: format!("a reserved job id is positive, got {id}"),
        });
    }
    match job.run_at {
        RunAt::Now => {}
        RunAt::Delay(d) => {
            time_range::check_delay("delay", d)?;
        }
        RunAt::At(at) => time_range::check_run_at("run_at", at)?,
    }
    Ok(())
}

impl Store {
    /// Enqueues one job. A duplicate idempotency key returns the holder's id with
    /// `created: false`.
    pub async fn enqueue(&self, job: &NewJob) -> Result<Enqueued, StoreError> {
        let mut out = self.enqueue_many(std::slice::from_ref(job)).await?;
        Ok(out.pop().expect("one result per job"))
    }

    /// Enqueues a batch in one statement: all rows or none. Results are in input order.
    /// Repeats of one (tenant, key) inside the batch resolve to the first one's job.
    #[tracing::instrument(name = "store.enqueue", level = "debug", skip_all, fields(jobs = jobs.len()))]
    pub async fn enqueue_many(&self, jobs: &[NewJob]) -> Result<Vec<Enqueued>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        self.enqueue_many_on(&mut conn, jobs).await
    }

    /// [`Store::enqueue_many`] on `conn`, inside whatever transaction it is in (the
    /// follow-up jobs of a completion are inserted in the completion's).
    pub(crate) async fn enqueue_many_on(
        &self,
        conn: &mut PgConnection,
        jobs: &[NewJob],
    ) -> Result<Vec<Enqueued>, StoreError> {
        for job in jobs {
            validate(job)?;
        }
        // Fold repeated keys within the batch onto their first occurrence.
        let mut first_of_key: HashMap<(&str, &str), usize> = HashMap::new();
        let mut alias: Vec<Option<usize>> = vec![None; jobs.len()];
        for (i, job) in jobs.iter().enumerate() {
            if let Some(key) = job.idempotency_key.as_deref() {
                match first_of_key.get(&(job.tenant.as_str(), key)) {
                    Some(&first) => alias[i] = Some(first),
                    None => {
                        first_of_key.insert((job.tenant.as_str(), key), i);
                    }
                }
            }
        }

        let mut results: Vec<Option<Enqueued>> = vec![None; jobs.len()];
        let mut todo: Vec<usize> = (0..jobs.len()).filter(|&i| alias[i].is_none()).collect();
        let mut round = 0;
        while !todo.is_empty() {
            round += 1;
            if round > MAX_KEY_ROUNDS {
                let job = &jobs[todo[0]];
                return Err(StoreError::KeyContended {
                    tenant: job.tenant.clone(),
                    key: job.idempotency_key.clone().unwrap_or_default(),
                });
            }
            let row = self.enqueue_round(&mut *conn, jobs, &todo).await?;
            if let Some(problem) = row.problem {
                let job = &jobs[todo[(row.problem_ord.unwrap_or(1) - 1) as usize]];
                return Err(match problem.as_str() {
                    "tenant" => StoreError::UnknownTenant(job.tenant.clone()),
                    "job_type" => StoreError::UnknownJobType {
                        tenant: job.tenant.clone(),
                        job_type: job.job_type.clone(),
                    },
                    _ => StoreError::PayloadTooLarge {
                        size: row.payload_size.unwrap_or_default(),
                        limit: row.payload_limit.unwrap_or_default(),
                    },
                });
            }
            let ids = row.ids.unwrap_or_default();
            if ids.len() != todo.len() {
                return Err(StoreError::Database(sqlx::Error::Protocol(format!(
                    "enqueue returned {} ids for {} jobs",
                    ids.len(),
                    todo.len()
                ))));
            }
            for (pos, &idx) in todo.iter().enumerate() {
                results[idx] = Some(Enqueued {
                    id: ids[pos],
                    created: true,
                });
            }
            let mut unresolved = Vec::new();
            let dup_ords = row.dup_ords.unwrap_or_default();
            let dup_holders = row.dup_holders.unwrap_or_default();
            for (ord, holder) in dup_ords.into_iter().zip(dup_holders) {
                let idx = todo[(ord - 1) as usize];
                match holder {
                    Some(id) => results[idx] = Some(Enqueued { id, created: false }),
                    None => {
                        results[idx] = None;
                        unresolved.push(idx);
                    }
                }
            }
            unresolved.sort_unstable();
            todo = unresolved;
        }
        Ok(results
            .iter()
            .enumerate()
            .map(|(i, r)| match alias[i] {
                Some(first) => Enqueued {
                    id: results[first].expect("resolved").id,
                    created: false,
                },
                None => r.expect("every row resolved"),
            })
            .collect())
    }

    /// One execution of the batch statement for the rows `idx` of `jobs`.
    async fn enqueue_round(
        &self,
        conn: &mut PgConnection,
        jobs: &[NewJob],
        idx: &[usize],
    ) -> Result<EnqueueRow, StoreError> {
        let n = idx.len();
        let rows = || idx.iter().map(|&i| &jobs[i]);
        let tenant: Vec<&str> = rows().map(|j| j.tenant.as_str()).collect();
        let job_type: Vec<&str> = rows().map(|j| j.job_type.as_str()).collect();
        let payload: Vec<&[u8]> = rows().map(|j| j.payload.as_slice()).collect();
        let priority: Vec<i16> = rows().map(|j| j.priority as i16).collect(); // validated
        // Columns most batches leave at their default are sent as NULL (see the SQL).
        let delay_us: Option<Vec<Option<i64>>> =
            if rows().any(|j| matches!(j.run_at, RunAt::Delay(_))) {
                let mut v = Vec::with_capacity(n);
                for j in rows() {
                    v.push(match j.run_at {
                        RunAt::Delay(d) => Some(time_range::check_delay("delay", d)?),
                        _ => None,
                    });
                }
                Some(v)
            } else {
                None
            };
        let at: Option<Vec<Option<DateTime<Utc>>>> =
            rows().any(|j| matches!(j.run_at, RunAt::At(_))).then(|| {
                rows()
                    .map(|j| match j.run_at {
                        RunAt::At(t) => Some(t),
                        _ => None,
                    })
                    .collect()
            });
        let max_attempts: Option<Vec<Option<i32>>> = rows()
            .any(|j| j.max_attempts.is_some())
            .then(|| rows().map(|j| j.max_attempts).collect());
        let key: Option<Vec<Option<&str>>> = rows()
            .any(|j| j.idempotency_key.is_some())
            .then(|| rows().map(|j| j.idempotency_key.as_deref()).collect());
        let scope: Option<Vec<&str>> = rows()
            .any(|j| j.key_scope != KeyScope::Retained)
            .then(|| rows().map(|j| j.key_scope.as_str()).collect());
        let parent_id: Option<Vec<Option<i64>>> = rows()
            .any(|j| j.parent.is_some())
            .then(|| rows().map(|j| j.parent.map(|p| p.id)).collect());
        let parent_seq: Option<Vec<Option<i32>>> = parent_id
            .as_ref()
            .map(|_| rows().map(|j| j.parent.map(|p| p.seq)).collect());
        let concurrency_key: Option<Vec<Option<&str>>> = rows()
            .any(|j| j.concurrency_key.is_some())
            .then(|| rows().map(|j| j.concurrency_key.as_deref()).collect());
        let reserved: Option<Vec<Option<i64>>> = rows()
            .any(|j| j.id.is_some())
            .then(|| rows().map(|j| j.id).collect());
        let traceparent: Option<Vec<Option<&str>>> = rows().any(|j| j.trace.is_some()).then(|| {
            rows()
                .map(|j| j.trace.as_ref().map(|t| t.traceparent.as_str()))
                .collect()
        });
        let tracestate: Option<Vec<Option<&str>>> = traceparent.as_ref().map(|_| {
            rows()
                .map(|j| j.trace.as_ref().and_then(|t| t.tracestate.as_deref()))
                .collect()
        });
        let statement = match (&traceparent, &reserved, &concurrency_key) {
            (Some(_), _, _) => ENQUEUE_TRACED_JOBS,
            (None, Some(_), _) => ENQUEUE_RESERVED_JOBS,
            (None, None, Some(_)) => ENQUEUE_KEYED_JOBS,
            (None, None, None) => ENQUEUE_JOBS,
        };
        let query = sqlx::query_as(statement)
            .bind(tenant)
            .bind(job_type)
            .bind(payload)
            .bind(priority)
            .bind(delay_us)
            .bind(at)
            .bind(max_attempts)
            .bind(key)
            .bind(scope)
            .bind(self.default_max_payload_bytes)
            .bind(parent_id)
            .bind(parent_seq);
        let query = match (traceparent, reserved, concurrency_key) {
            (Some(parents), ids, keys) => query.bind(keys).bind(ids).bind(parents).bind(tracestate),
            (None, Some(ids), keys) => query.bind(keys).bind(ids),
            (None, None, Some(keys)) => query.bind(keys),
            (None, None, None) => query,
        };
        let row: EnqueueRow = query.fetch_one(conn).await?;
        Ok(row)
    }
}
