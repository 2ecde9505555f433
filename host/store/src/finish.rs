//! The worker's side of the queue, second half: the four ways an attempt ends
//! (complete, fail, release, mark_cancelled); completions and failures also in batches.
//!
//! Owns: every statement that moves a job out of `running` on behalf of the lease
//! holder, and the archiving of the attempt into the history in the same statement
//! (a completion keeps it on the row: `history.rs`).
//! Must not: change a job without matching `id`, `state = 'running'` and the lease
//! token in the same statement — a stale holder must never overwrite anything.
//!
//! Each transition tells where the job went, because the statement (not the caller)
//! decides it: `fail` gives a [`FailResult`], `release` and `mark_cancelled` an
//! [`AttemptOutcome`] (a release ends `cancelled` when a cancel was requested meanwhile);
//! a completion has one destination, so `Ok(())` says it.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::history::{archive_attempt, clear_attempt, held_attempt, ran_columns};
use crate::listen::{JOBS_CHANNEL, due_payload};
use crate::time_range::MAX_DELAY;
use crate::types::{AttemptOutcome, JobState, Lease};
use crate::{Store, StoreError, micros, text};

/// A successful attempt.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Completion {
    pub output: Vec<u8>,
    pub fuel_used: Option<i64>,
}

/// Retry delay policy: `min(cap, base * 2^(attempt-1)) * (1 ± jitter * random())`,
/// computed in SQL from database time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Backoff {
    pub base: Duration,
    pub cap: Duration,
    /// Fraction in `0.0..=1.0`.
    pub jitter: f64,
}

impl Default for Backoff {
    /// 1 s, capped at 1 h, ±20 %.
    fn default() -> Self {
        Backoff {
            base: Duration::from_secs(1),
            cap: Duration::from_secs(3600),
            jitter: 0.2,
        }
    }
}

/// A failed attempt.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// Kept as the job's `last_error` and in the attempt history.
    pub error: String,
    /// Permanent: dead now, whatever attempts are left.
    pub fatal: bool,
    pub backoff: Backoff,
    pub fuel_used: Option<i64>,
}

impl Failure {
    /// A retryable failure with the default backoff.
    pub fn retry(error: impl Into<String>) -> Self {
        Failure {
            error: error.into(),
            fatal: false,
            backoff: Backoff::default(),
            fuel_used: None,
        }
    }

    /// A permanent failure.
    pub fn fatal(error: impl Into<String>) -> Self {
        Failure {
            fatal: true,
            ..Failure::retry(error)
        }
    }
}

/// Where a failed job went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailResult {
    /// Back to pending, due at `run_at`.
    Retrying { run_at: DateTime<Utc> },
    /// Attempts used up, or the failure was fatal.
    Dead,
    /// A cancel had been requested while it ran: cancelled instead of retried.
    Cancelled,
}

impl FailResult {
    /// The attempt's outcome as the history records it (`retry`, `dead`, `cancelled`).
    pub fn outcome(self) -> AttemptOutcome {
        match self {
            FailResult::Retrying { .. } => AttemptOutcome::Retry,
            FailResult::Dead => AttemptOutcome::Dead,
            FailResult::Cancelled => AttemptOutcome::Cancelled,
        }
    }
}

/// The `held` CTE every lease holder's statement but the completion starts with: the job
/// row locked, fenced on `$1` (id), `state = 'running'` and `$2` (lease token), with the
/// attempt it holds and the given extra columns (each followed by `, `).
macro_rules! held_by_lease {
    ($extra:literal) => {
        concat!(
            "
WITH held AS (
    SELECT id, ",
            $extra,
            held_attempt!(),
            "
    FROM sluice.jobs
    WHERE id = $1 AND state = 'running' AND lease_token = $2
    FOR UPDATE
),"
        )
    };
}

/// Completes a batch: one statement applies every outcome whose lease still holds;
/// stale ones match nothing and are reported per job. The attempt stays on the completed
/// row (migration 9) with the fuel it used: a completion writes one row version and
/// nothing else.
///
/// One table, no join: the rows are found by primary key (`id = ANY`), and each row's
/// token, output and fuel are read from the arrays at its id's position. Joined with
/// `unnest`, the planner picked by estimate between a probe per outcome, a scan of the
/// whole table (13 ms for 100 outcomes early in a drain) and a bitmap scan of the
/// running-only partial index, which walked every dead entry the drain had left in it
/// (40,000 for a batch of 240: the estimate does not see them and bitmap scans never
/// mark them dead). The state is compared as text so that no plan can match that index
/// (migration 0008's claim does the same for the pending-only indexes).
const COMPLETE_MANY: &str = "
UPDATE sluice.jobs j
SET state = 'completed', output = ($3::bytea[])[array_position($1::int8[], j.id)],
    finished_at = now(), updated_at = now(),
    attempt_fuel = ($4::int8[])[array_position($1::int8[], j.id)],
    locked_by = NULL, locked_until = NULL, lease_token = NULL, cancel_requested = false
WHERE j.id = ANY ($1::int8[]) AND j.state::text = 'running'
  AND j.lease_token = ($2::uuid[])[array_position($1::int8[], j.id)]
RETURNING j.id
";

/// Fails a batch: `held` locks every fenced row of the input (found as in
/// `COMPLETE_MANY`, in id order so two batches never deadlock on each other) and decides
/// where each goes: cancelled if a cancel was requested, dead if fatal or out of
/// attempts, else pending at now() + backoff. Every attempt moves into the history; listeners get one notice, for the
/// earliest retry. Stale leases match nothing and are reported per job.
const FAIL_MANY: &str = concat!(
    "
WITH held AS (
    SELECT j.id, i.error, i.fuel,
           CASE WHEN j.cancel_requested THEN 'cancelled'
                WHEN i.fatal OR j.attempt >= j.max_attempts THEN 'dead'
                ELSE 'pending'
           END::sluice.job_state AS next_state,
           now() + least(i.cap_us, i.base_us * power(2::float8, least(j.attempt - 1, 62)))
                 * (1 + i.jitter * (2 * random() - 1))
                 * interval '1 microsecond' AS retry_at, ",
    held_attempt!(),
    "
    FROM sluice.jobs j
    -- The row's own failure, at its id's position in the arrays.
    CROSS JOIN LATERAL (
        SELECT ($2::uuid[])[n] AS token, ($3::text[])[n] AS error, ($4::bool[])[n] AS fatal,
               ($5::float8[])[n] AS base_us, ($6::float8[])[n] AS cap_us,
               ($7::float8[])[n] AS jitter, ($8::int8[])[n] AS fuel
        FROM (SELECT array_position($1::int8[], j.id) AS n) p
    ) i
    -- By primary key, for the reasons given on `COMPLETE_MANY`.
    WHERE j.id = ANY ($1::int8[]) AND j.state::text = 'running' AND j.lease_token = i.token
    ORDER BY j.id
    FOR UPDATE OF j
),
moved AS (
    UPDATE sluice.jobs j
    SET state = h.next_state,
        run_at = CASE WHEN h.next_state = 'pending' THEN h.retry_at ELSE j.run_at END,
        finished_at = CASE WHEN h.next_state = 'pending' THEN NULL ELSE now() END,
        last_error = h.error,
        locked_by = NULL, locked_until = NULL, lease_token = NULL, cancel_requested = false,
        updated_at = now(), ",
    clear_attempt!(),
    "
    FROM held h
    WHERE j.id = h.id AND j.state::text = 'running' AND j.lease_token = h.lease_token
    RETURNING j.id, j.state, j.run_at, h.error, h.fuel, ",
    ran_columns!(),
    "
),
",
    archive_attempt!(
        "CASE m.state WHEN 'pending' THEN 'retry' WHEN 'dead' THEN 'dead' ELSE 'cancelled' END",
        "m.error",
        "m.fuel"
    ),
    ",
notified AS (
    SELECT pg_notify($9, ",
    due_payload!("n.at"),
    ")
    FROM (SELECT min(m.run_at) AS at FROM moved m WHERE m.state = 'pending') n
    WHERE n.at IS NOT NULL
)
SELECT id, state, run_at, (SELECT count(*) FROM notified) AS notified FROM moved
"
);

/// Back to pending without using the attempt (or to cancelled if a cancel is pending).
const RELEASE: &str = concat!(
    held_by_lease!("cancel_requested, "),
    "
moved AS (
    UPDATE sluice.jobs j
    SET state = CASE WHEN h.cancel_requested THEN 'cancelled'::sluice.job_state
                     ELSE 'pending' END,
        attempt = CASE WHEN h.cancel_requested THEN j.attempt ELSE j.attempt - 1 END,
        finished_at = CASE WHEN h.cancel_requested THEN now() END,
        last_error = CASE WHEN h.cancel_requested THEN 'cancelled by operator'
                          ELSE j.last_error END,
        locked_by = NULL, locked_until = NULL, lease_token = NULL, cancel_requested = false,
        updated_at = now(), ",
    clear_attempt!(),
    "
    FROM held h
    WHERE j.id = h.id AND j.state = 'running' AND j.lease_token = $2
    RETURNING j.id, j.state, ",
    ran_columns!(),
    "
),
",
    archive_attempt!(
        "CASE WHEN m.state = 'pending' THEN 'released' ELSE 'cancelled' END",
        "$3",
        "NULL::int8"
    ),
    ",
notified AS (
    SELECT pg_notify($4, '') FROM moved WHERE state = 'pending'
)
SELECT id, state, (SELECT count(*) FROM notified) AS notified FROM moved
"
);

const MARK_CANCELLED: &str = concat!(
    held_by_lease!(""),
    "
moved AS (
    UPDATE sluice.jobs j
    SET state = 'cancelled', finished_at = now(), last_error = $3,
        locked_by = NULL, locked_until = NULL, lease_token = NULL, cancel_requested = false,
        updated_at = now(), ",
    clear_attempt!(),
    "
    FROM held h
    WHERE j.id = h.id AND j.state = 'running' AND j.lease_token = $2
    RETURNING j.id, ",
    ran_columns!(),
    "
),
",
    archive_attempt!("'cancelled'", "$3", "NULL::int8"),
    "
SELECT id FROM moved
"
);

/// One result per input id, in input order: what the statement applied to it, or
/// `LeaseLost` if it matched nothing (its lease was stale).
fn in_input_order<T: Copy>(ids: Vec<i64>, applied: HashMap<i64, T>) -> Vec<Result<T, StoreError>> {
    ids.into_iter()
        .map(|job_id| {
            applied
                .get(&job_id)
                .copied()
                .ok_or(StoreError::LeaseLost { job_id })
        })
        .collect()
}

fn validate_backoff(b: &Backoff) -> Result<(i64, i64, f64), StoreError> {
    if !(0.0..=1.0).contains(&b.jitter) {
        return Err(StoreError::InvalidInput {
            field: "backoff.jitter",
            message: format!("must be a fraction between 0 and 1, got {}", b.jitter),
        });
    }
    Ok((
        // Clamped, not refused: this is an attempt's outcome, and a type stored before
        // set_job_type bounded its backoff must not make the batch's statement overflow.
        micros("backoff.base", b.base.min(MAX_DELAY), false)?,
        micros("backoff.cap", b.cap.min(MAX_DELAY), false)?,
        b.jitter,
    ))
}

fn validate_fuel(fuel_used: Option<i64>) -> Result<(), StoreError> {
    match fuel_used {
        Some(f) if f < 0 => Err(StoreError::InvalidInput {
            field: "fuel_used",
            message: format!("{f} is negative"),
        }),
        _ => Ok(()),
    }
}

impl Store {
    /// running → completed, storing the output. `LeaseLost` if the lease is stale.
    #[tracing::instrument(name = "store.complete", level = "debug", skip_all, fields(job_id = lease.job_id))]
    pub async fn complete(&self, lease: &Lease, done: &Completion) -> Result<(), StoreError> {
        let mut results = self.complete_many(&[(*lease, done.clone())]).await?;
        results.pop().expect("one result per input")
    }

    /// `complete` for many jobs in one statement. The result has one entry per input, in
    /// order: `Ok` if applied, `Err(LeaseLost)` if that lease was stale (the others are
    /// applied regardless).
    #[tracing::instrument(name = "store.complete_many", level = "debug", skip_all, fields(count = outcomes.len()))]
    pub async fn complete_many(
        &self,
        outcomes: &[(Lease, Completion)],
    ) -> Result<Vec<Result<(), StoreError>>, StoreError> {
        let mut ids = Vec::with_capacity(outcomes.len());
        let mut tokens = Vec::with_capacity(outcomes.len());
        let mut outputs = Vec::with_capacity(outcomes.len());
        let mut fuel = Vec::with_capacity(outcomes.len());
        for (lease, done) in outcomes {
            validate_fuel(done.fuel_used)?;
            ids.push(lease.job_id);
            tokens.push(lease.token);
            outputs.push(done.output.as_slice());
            fuel.push(done.fuel_used);
        }
        let applied: Vec<i64> = sqlx::query_scalar(COMPLETE_MANY)
            .bind(&ids)
            .bind(&tokens)
            .bind(&outputs)
            .bind(&fuel)
            .fetch_all(&self.pool)
            .await?;
        let applied = applied.into_iter().map(|id| (id, ())).collect();
        Ok(in_input_order(ids, applied))
    }

    /// running → pending (retry after backoff), dead (fatal or out of attempts) or
    /// cancelled (a cancel was requested). `last_error` is set in every case.
    #[tracing::instrument(name = "store.fail", level = "debug", skip_all, fields(job_id = lease.job_id, fatal = failure.fatal))]
    pub async fn fail(&self, lease: &Lease, failure: &Failure) -> Result<FailResult, StoreError> {
        let mut results = self.fail_many(&[(*lease, failure.clone())]).await?;
        results.pop().expect("one result per input")
    }

    /// `fail` for many jobs in one statement. The result has one entry per input, in
    /// order: where that job went, or `Err(LeaseLost)` if its lease was stale (the others
    /// are applied regardless).
    #[tracing::instrument(name = "store.fail_many", level = "debug", skip_all, fields(count = outcomes.len()))]
    pub async fn fail_many(
        &self,
        outcomes: &[(Lease, Failure)],
    ) -> Result<Vec<Result<FailResult, StoreError>>, StoreError> {
        let mut backoffs = Vec::with_capacity(outcomes.len());
        for (_, failure) in outcomes {
            backoffs.push(validate_backoff(&failure.backoff)?);
            validate_fuel(failure.fuel_used)?;
        }
        if outcomes.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<i64> = outcomes.iter().map(|(l, _)| l.job_id).collect();
        // (base µs, cap µs, jitter) of each failure, as validated above.
        let backoff =
            |part: fn(&(i64, i64, f64)) -> f64| -> Vec<f64> { backoffs.iter().map(part).collect() };
        let moved: Vec<(i64, JobState, DateTime<Utc>, i64)> = sqlx::query_as(FAIL_MANY)
            .bind(&ids)
            .bind(outcomes.iter().map(|(l, _)| l.token).collect::<Vec<_>>())
            .bind(
                // A guest's message may hold NUL, which `text` cannot store.
                outcomes
                    .iter()
                    .map(|(_, f)| text::lossy(&f.error))
                    .collect::<Vec<_>>(),
            )
            .bind(outcomes.iter().map(|(_, f)| f.fatal).collect::<Vec<_>>())
            .bind(backoff(|b| b.0 as f64))
            .bind(backoff(|b| b.1 as f64))
            .bind(backoff(|b| b.2))
            .bind(
                outcomes
                    .iter()
                    .map(|(_, f)| f.fuel_used)
                    .collect::<Vec<_>>(),
            )
            .bind(JOBS_CHANNEL)
            .fetch_all(&self.pool)
            .await?;
        let moved = moved
            .into_iter()
            .map(|(id, state, run_at, _)| {
                let result = match state {
                    JobState::Pending => FailResult::Retrying { run_at },
                    JobState::Dead => FailResult::Dead,
                    _ => FailResult::Cancelled,
                };
                (id, result)
            })
            .collect();
        Ok(in_input_order(ids, moved))
    }

    /// running → pending without using the attempt (host shutdown, infrastructure
    /// failure). If a cancel was requested meanwhile the job becomes cancelled instead.
    /// `reason` goes to the attempt history. Returns where the job went:
    /// [`AttemptOutcome::Released`] or [`AttemptOutcome::Cancelled`].
    #[tracing::instrument(name = "store.release", level = "debug", skip_all, fields(job_id = lease.job_id))]
    pub async fn release(&self, lease: &Lease, reason: &str) -> Result<AttemptOutcome, StoreError> {
        let row: Option<(i64, JobState, i64)> = sqlx::query_as(RELEASE)
            .bind(lease.job_id)
            .bind(lease.token)
            .bind(text::lossy(reason).as_ref())
            .bind(JOBS_CHANNEL)
            .fetch_optional(&self.pool)
            .await?;
        match row {
            Some((_, JobState::Pending, _)) => Ok(AttemptOutcome::Released),
            Some(_) => Ok(AttemptOutcome::Cancelled),
            None => Err(StoreError::LeaseLost {
                job_id: lease.job_id,
            }),
        }
    }

    /// running → cancelled, by the worker after it interrupted a job whose cancel was
    /// requested. `reason` becomes `last_error`. Returns [`AttemptOutcome::Cancelled`]
    /// (the one place it can go), like every lease holder's transition.
    #[tracing::instrument(name = "store.mark_cancelled", level = "debug", skip_all, fields(job_id = lease.job_id))]
    pub async fn mark_cancelled(
        &self,
        lease: &Lease,
        reason: &str,
    ) -> Result<AttemptOutcome, StoreError> {
        let row: Option<i64> = sqlx::query_scalar(MARK_CANCELLED)
            .bind(lease.job_id)
            .bind(lease.token)
            .bind(text::lossy(reason).as_ref())
            .fetch_optional(&self.pool)
            .await?;
        row.map(|_| AttemptOutcome::Cancelled)
            .ok_or(StoreError::LeaseLost {
                job_id: lease.job_id,
            })
    }
}
