//! Operator operations: cancel, retry, and reading jobs and their attempt history.
//!
//! Owns: the statements behind `sluice jobs cancel|retry|list|show` and the HTTP job
//! endpoints. Must not: touch a running job's lease (a running job is only *asked* to
//! cancel; its worker ends it), or page with OFFSET (lists are keyset on id).

use chrono::{DateTime, Utc};

use crate::error::is_unique_violation;
use crate::listen::{CANCEL_CHANNEL, JOBS_CHANNEL};
use crate::types::{AttemptOutcome, JobState, KeyScope};
use crate::{Store, StoreError, text};

/// What `cancel` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CancelResult {
    /// The job was pending or waiting and is now cancelled.
    Cancelled,
    /// The job is running: its worker was notified (channel `sluice_cancel`, and via
    /// heartbeat) and will interrupt it and mark it cancelled.
    CancelRequested,
}

/// A job with its payload and output.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct JobRecord {
    /// The job's id (`sluice.jobs.id`), stable across attempts and retries.
    pub id: i64,
    /// The tenant that owns the job.
    pub tenant: String,
    /// The job type it runs as (resolved to a component and limits at each claim).
    pub job_type: String,
    /// The payload bytes as enqueued.
    pub payload: Vec<u8>,
    /// Higher is claimed first within the tenant (fits an `i16`).
    pub priority: i32,
    /// Where it is in the state machine (`docs/state-machine.md`).
    pub state: JobState,
    /// When it is due: claimable from then on (a retry's backoff moves it later).
    pub run_at: DateTime<Utc>,
    /// Attempts used: the claim adds one, a release gives it back, a retry resets it to 0.
    pub attempt: i32,
    /// Its attempt budget; a failed attempt number `max_attempts` makes it dead.
    pub max_attempts: i32,
    /// The key it was enqueued with (1 to 255 characters); `None` if none.
    pub idempotency_key: Option<String>,
    /// How long the key stays taken (retained, or while unfinished).
    pub key_scope: KeyScope,
    /// The worker id holding its lease; `Some` exactly while running.
    pub locked_by: Option<String>,
    /// When the lease expires unless a heartbeat extends it (the database's clock); `Some`
    /// exactly while running.
    pub locked_until: Option<DateTime<Utc>>,
    /// An operator asked the running job to stop; only ever true while running.
    pub cancel_requested: bool,
    /// The error of its last failed, expired or cancelled attempt, kept after a later
    /// completion; `None` if none.
    pub last_error: Option<String>,
    /// The output of its successful attempt; `None` unless completed.
    pub output: Option<Vec<u8>>,
    /// When it was enqueued.
    pub created_at: DateTime<Utc>,
    /// When its row last changed (a claim, a heartbeat, the end of an attempt, a cancel, a
    /// retry).
    pub updated_at: DateTime<Utc>,
    /// When it completed, died or was cancelled; `Some` exactly in those states.
    pub finished_at: Option<DateTime<Utc>>,
    /// The job whose successful attempt made this one (a follow-up job), if any.
    pub parent_id: Option<i64>,
    /// Its follow-up jobs, in the order its attempt asked for them: the first
    /// [`MAX_CHILDREN_SHOWN`] ids (`children_count` has them all).
    pub children: Vec<i64>,
    /// How many follow-up jobs it has, all of them.
    pub children_count: i64,
    /// Its concurrency key (docs/flow-control.md), if any.
    pub concurrency_key: Option<String>,
    /// The signal name it waits for; `Some` only while `waiting` (an await-signal).
    pub waiting_for: Option<String>,
    /// The job ids it waits for; `Some` only while `waiting` (an await-jobs).
    pub awaited: Option<Vec<i64>>,
    /// How many times it snoozed so far (flow.snooze; bounded by the type's
    /// `--max-snoozes`). A waiting job's wake-up time is `run_at`.
    pub snoozes: i32,
    /// Why it is pending though due, when a flow control holds it back.
    #[sqlx(skip)]
    pub held: Option<crate::Held>,
}

/// How many child ids a [`JobRecord`] carries (list the rest with
/// [`JobFilter::parent`]).
pub const MAX_CHILDREN_SHOWN: usize = 100;

/// A job as listed: everything but the payload and output bytes (their sizes instead).
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct JobSummary {
    /// The job's id (`sluice.jobs.id`), stable across attempts and retries.
    pub id: i64,
    /// The tenant that owns the job.
    pub tenant: String,
    /// The job type it runs as (resolved to a component and limits at each claim).
    pub job_type: String,
    /// Length of the payload, in bytes.
    pub payload_size: i32,
    /// Higher is claimed first within the tenant (fits an `i16`).
    pub priority: i32,
    /// Where it is in the state machine (`docs/state-machine.md`).
    pub state: JobState,
    /// When it is due: claimable from then on (a retry's backoff moves it later).
    pub run_at: DateTime<Utc>,
    /// Attempts used: the claim adds one, a release gives it back, a retry resets it to 0.
    pub attempt: i32,
    /// Its attempt budget; a failed attempt number `max_attempts` makes it dead.
    pub max_attempts: i32,
    /// The key it was enqueued with (1 to 255 characters); `None` if none.
    pub idempotency_key: Option<String>,
    /// How long the key stays taken (retained, or while unfinished).
    pub key_scope: KeyScope,
    /// The worker id holding its lease; `Some` exactly while running.
    pub locked_by: Option<String>,
    /// When the lease expires unless a heartbeat extends it (the database's clock); `Some`
    /// exactly while running.
    pub locked_until: Option<DateTime<Utc>>,
    /// An operator asked the running job to stop; only ever true while running.
    pub cancel_requested: bool,
    /// The error of its last failed, expired or cancelled attempt, kept after a later
    /// completion; `None` if none.
    pub last_error: Option<String>,
    /// Length of the output, in bytes; `None` unless completed.
    pub output_size: Option<i32>,
    /// The first 120 bytes of the output, for tables (the whole output is in `JobRecord`).
    pub output_head: Option<Vec<u8>>,
    /// When it was enqueued.
    pub created_at: DateTime<Utc>,
    /// When its row last changed (a claim, a heartbeat, the end of an attempt, a cancel, a
    /// retry).
    pub updated_at: DateTime<Utc>,
    /// When it completed, died or was cancelled; `Some` exactly in those states.
    pub finished_at: Option<DateTime<Utc>>,
    /// The job whose successful attempt made this one (a follow-up job), if any.
    pub parent_id: Option<i64>,
}

/// Which jobs to list, newest first. For the next page pass the last id as `after`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobFilter {
    /// Only this tenant's jobs; `None`: every tenant's (admin).
    pub tenant: Option<String>,
    /// Only jobs in this state.
    pub state: Option<JobState>,
    /// Only jobs of this type.
    pub job_type: Option<String>,
    /// Only the follow-up jobs of this job.
    pub parent: Option<i64>,
    /// Keyset cursor: only jobs with `id < after`.
    pub after: Option<i64>,
    /// 1..=1000.
    pub limit: u32,
}

impl Default for JobFilter {
    fn default() -> Self {
        JobFilter {
            tenant: None,
            state: None,
            job_type: None,
            parent: None,
            after: None,
            limit: 100,
        }
    }
}

/// One attempt of a job.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct AttemptRecord {
    /// The attempt's id (`sluice.job_attempts.id`), in claim order.
    pub id: i64,
    /// The job it was an attempt of.
    pub job_id: i64,
    /// Its number, from 1 (it starts again at 1 after an operator's retry).
    pub attempt: i32,
    /// The id of the worker that ran it.
    pub worker: String,
    /// When it was claimed.
    pub started_at: DateTime<Utc>,
    /// `None` while the attempt runs.
    pub finished_at: Option<DateTime<Utc>>,
    /// How it ended; `None` while it runs.
    pub outcome: Option<AttemptOutcome>,
    /// Why it failed, expired, was released or cancelled; `None` when it completed or runs.
    pub error: Option<String>,
    /// Fuel it burned; `None` while it runs, or when not recorded.
    pub fuel_used: Option<i64>,
}

/// pending → cancelled, or running → cancel requested (with a NOTIFY to its worker).
const CANCEL: &str = include_str!("../sql/admin/cancel.sql");

/// dead|cancelled → pending with a fresh set of attempts, due now.
const RETRY: &str = include_str!("../sql/admin/retry.sql");

/// Every dead job (of a tenant / job type) back to pending, skipping taken keys.
const RETRY_DEAD: &str = include_str!("../sql/admin/retry_dead.sql");

const GET_JOB: &str = include_str!("../sql/admin/get_job.sql");

/// The head of the listing; `Store::list` appends the filters (see the file).
const LIST_SELECT: &str = include_str!("../sql/admin/list_jobs.sql");

const ATTEMPTS: &str = include_str!("../sql/admin/attempts.sql");

/// Runs of `cancel.sql` before a cancel racing claims gives up.
const CANCEL_TRIES: usize = 5;

impl Store {
    /// Cancels a pending or waiting job at once, or asks a running one's worker to stop. Terminal
    /// jobs are refused with `IllegalTransition`. `tenant: Some` scopes the lookup.
    #[tracing::instrument(name = "store.cancel", level = "debug", skip_all, fields(id))]
    pub async fn cancel(&self, tenant: Option<&str>, id: i64) -> Result<CancelResult, StoreError> {
        if !tenant.is_none_or(text::findable) {
            return Err(StoreError::job_not_found(id));
        }
        // A claim committing between the statement's snapshot and its lock can leave the
        // locked state and the written row apart; then nothing changed (cancel.sql) and
        // the statement runs again on the new state.
        for _ in 0..CANCEL_TRIES {
            let row: Option<(JobState, bool, i64)> = sqlx::query_as(CANCEL)
                .bind(id)
                .bind(tenant)
                .bind(CANCEL_CHANNEL)
                .fetch_optional(&self.pool)
                .await?;
            match row {
                None => return Err(StoreError::job_not_found(id)),
                Some((JobState::Pending | JobState::Waiting, true, _)) => {
                    return Ok(CancelResult::Cancelled);
                }
                Some((JobState::Running, true, _)) => return Ok(CancelResult::CancelRequested),
                Some((state, false, _)) if !state.is_terminal() => continue,
                Some((state, _, _)) => {
                    return Err(StoreError::IllegalTransition {
                        id,
                        state,
                        action: "cancel",
                    });
                }
            }
        }
        Err(StoreError::Conflict {
            field: "id",
            message: format!("job {id} kept changing state while it was cancelled; try again"),
        })
    }

    /// Runs a dead or cancelled job again: pending, attempts reset to 0, due now.
    /// Other states are refused with `IllegalTransition`, as is a job whose
    /// unfinished-scoped idempotency key another job has taken meanwhile.
    #[tracing::instrument(name = "store.retry", level = "debug", skip_all, fields(id))]
    pub async fn retry(&self, tenant: Option<&str>, id: i64) -> Result<(), StoreError> {
        if !tenant.is_none_or(text::findable) {
            return Err(StoreError::job_not_found(id));
        }
        let result: Result<Option<(JobState, bool, i64)>, sqlx::Error> = sqlx::query_as(RETRY)
            .bind(id)
            .bind(tenant)
            .bind(JOBS_CHANNEL)
            .fetch_optional(&self.pool)
            .await;
        match result {
            Ok(None) => Err(StoreError::job_not_found(id)),
            Ok(Some((_, true, _))) => Ok(()),
            Ok(Some((state, false, _))) => Err(StoreError::IllegalTransition {
                id,
                state,
                action: "retry (only dead or cancelled jobs can be retried)",
            }),
            Err(e) if is_unique_violation(&e, "jobs_idempotency_key_uidx") => {
                let state = self
                    .get(tenant, id)
                    .await?
                    .map_or(JobState::Dead, |j| j.state);
                Err(StoreError::IllegalTransition {
                    id,
                    state,
                    action: "retry while another job holds its idempotency key",
                })
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Retries every dead job of a tenant (or all tenants), optionally of one job type.
    /// Returns how many went back to pending.
    #[tracing::instrument(name = "store.retry_dead", level = "debug", skip_all)]
    pub async fn retry_dead(
        &self,
        tenant: Option<&str>,
        job_type: Option<&str>,
    ) -> Result<u64, StoreError> {
        if !tenant.is_none_or(text::findable) || !job_type.is_none_or(text::findable) {
            return Ok(0); // no job can have such a tenant or type
        }
        // A concurrent enqueue can take a key between the NOT EXISTS check and the
        // update; the statement then fails as a whole and is simply run again.
        let mut tries = 0;
        loop {
            tries += 1;
            let result: Result<(i64, i64), sqlx::Error> = sqlx::query_as(RETRY_DEAD)
                .bind(tenant)
                .bind(job_type)
                .bind(JOBS_CHANNEL)
                .fetch_one(&self.pool)
                .await;
            match result {
                Ok((retried, _)) => return Ok(retried as u64),
                Err(e) if tries < 3 && is_unique_violation(&e, "jobs_idempotency_key_uidx") => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// One job. `tenant: Some` scopes the lookup: another tenant's job is `None`.
    pub async fn get(
        &self,
        tenant: Option<&str>,
        id: i64,
    ) -> Result<Option<JobRecord>, StoreError> {
        if !tenant.is_none_or(text::findable) {
            return Ok(None);
        }
        let mut job: Option<JobRecord> = sqlx::query_as(GET_JOB)
            .bind(id)
            .bind(tenant)
            .fetch_optional(&self.pool)
            .await?;
        if let Some(job) = job.as_mut().filter(|j| j.state == JobState::Pending) {
            job.held = self.job_held(id, tenant).await?;
        }
        Ok(job)
    }

    /// Jobs matching `filter`, newest first (keyset on id, never OFFSET).
    pub async fn list(&self, filter: &JobFilter) -> Result<Vec<JobSummary>, StoreError> {
        if filter.limit == 0 || filter.limit > 1000 {
            return Err(StoreError::InvalidInput {
                field: "limit",
                message: format!("list 1 to 1000 jobs per page, asked for {}", filter.limit),
            });
        }
        if !filter.tenant.as_deref().is_none_or(text::findable)
            || !filter.job_type.as_deref().is_none_or(text::findable)
        {
            return Ok(Vec::new()); // no job can have such a tenant or type
        }
        let mut q = sqlx::QueryBuilder::<sqlx::Postgres>::new(LIST_SELECT);
        if let Some(tenant) = &filter.tenant {
            q.push(" AND tenant = ").push_bind(tenant);
        }
        if let Some(state) = filter.state {
            // A literal (from a fixed set), so the planner can use the partial indexes.
            q.push(" AND state = '").push(state.as_str()).push("'");
        }
        if let Some(job_type) = &filter.job_type {
            q.push(" AND job_type = ").push_bind(job_type);
        }
        if let Some(parent) = filter.parent {
            q.push(" AND parent_id = ").push_bind(parent);
        }
        if let Some(after) = filter.after {
            q.push(" AND id < ").push_bind(after);
        }
        q.push(" ORDER BY id DESC LIMIT ")
            .push_bind(i64::from(filter.limit));
        Ok(q.build_query_as().fetch_all(&self.pool).await?)
    }

    /// The attempt history of a job, oldest first (empty if the job does not exist or
    /// belongs to another tenant).
    pub async fn attempts(
        &self,
        tenant: Option<&str>,
        id: i64,
    ) -> Result<Vec<AttemptRecord>, StoreError> {
        if !tenant.is_none_or(text::findable) {
            return Ok(Vec::new());
        }
        Ok(sqlx::query_as(ATTEMPTS)
            .bind(id)
            .bind(tenant)
            .fetch_all(&self.pool)
            .await?)
    }
}
