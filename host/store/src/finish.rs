//! The worker's side of the queue, second half: the four ways an attempt ends
//! (complete, fail, release, mark_cancelled); completions and failures also in batches.
//!
//! Owns: every statement that moves a job out of `running` on behalf of the lease
//! holder (`sql/finish/`), and the archiving of the attempt into the history in the same
//! statement (a completion keeps it on the row, migration 0009), and of the attempt's
//! log into `sluice.attempt_logs` when it logged anything (`attempt_logs.rs`).
//! Must not: change a job without matching `id`, `state = 'running'` and the lease
//! token in the same statement — a stale holder must never overwrite anything.
//!
//! Each transition tells where the job went, because the statement (not the caller)
//! decides it: `fail` gives a [`FailResult`], `release` and `mark_cancelled` an
//! [`AttemptOutcome`] (a release ends `cancelled` when a cancel was requested meanwhile);
//! a completion has one destination, so `Ok(())` says it.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use crate::attempt_logs::{AttemptLog, log_columns, log_params};
use crate::enqueue::NewJob;
use crate::listen::JOBS_CHANNEL;
use crate::time_range::MAX_DELAY;
use crate::types::{AttemptOutcome, Backoff, JobState, Lease};
use crate::{Store, StoreError, micros, text};

/// A successful attempt.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Completion {
    /// The attempt's output, stored as the job's `output`.
    pub output: Vec<u8>,
    /// Fuel the attempt burned, kept on the attempt (`None`: not measured).
    pub fuel_used: Option<i64>,
    /// Jobs the attempt asked for (follow-up jobs, in the order asked), inserted in the
    /// completion's transaction: they exist if and only if the completion is written.
    /// Each one's tenant must be the completed job's; its `parent` is set by the store.
    pub follow_ups: Vec<NewJob>,
    /// What the attempt logged (`None`: nothing, and nothing more is written).
    pub log: Option<AttemptLog>,
}

/// A failed attempt.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// Kept as the job's `last_error` and in the attempt history.
    pub error: String,
    /// Permanent: dead now, whatever attempts are left.
    pub fatal: bool,
    /// The delay before the next attempt when it is retried (the job type's policy).
    pub backoff: Backoff,
    /// Fuel the attempt burned, kept in the attempt history (`None`: not measured).
    pub fuel_used: Option<i64>,
    /// What the attempt logged (`None`: nothing, and nothing more is written).
    pub log: Option<AttemptLog>,
}

impl Failure {
    /// A retryable failure with the default backoff.
    pub fn retry(error: impl Into<String>) -> Self {
        Failure {
            error: error.into(),
            fatal: false,
            backoff: Backoff::default(),
            fuel_used: None,
            log: None,
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
    Retrying {
        /// `now()` plus the backoff for the failed attempt (the database's clock).
        run_at: DateTime<Utc>,
    },
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

/// running → completed for a batch, by primary key (see the file's header).
pub(crate) const COMPLETE_MANY: &str = include_str!("../sql/finish/complete_many.sql");

/// running → pending | dead | cancelled for a batch; archives each attempt.
const FAIL_MANY: &str = include_str!("../sql/finish/fail_many.sql");

/// Back to pending without using the attempt (or to cancelled if a cancel is pending).
const RELEASE: &str = include_str!("../sql/finish/release.sql");

/// running → cancelled by the worker that interrupted the job.
const MARK_CANCELLED: &str = include_str!("../sql/finish/mark_cancelled.sql");

/// One result per input id, in input order: what the statement applied to it, or
/// `LeaseLost` if it matched nothing (its lease was stale).
pub(crate) fn in_input_order<T: Copy>(
    ids: Vec<i64>,
    applied: HashMap<i64, T>,
) -> Vec<Result<T, StoreError>> {
    ids.into_iter()
        .map(|job_id| {
            applied
                .get(&job_id)
                .copied()
                .ok_or(StoreError::LeaseLost { job_id })
        })
        .collect()
}

/// A failure's backoff as the statement binds it: base µs, cap µs, jitter fraction.
type BackoffMicros = (i64, i64, f64);

fn validate_backoff(b: &Backoff) -> Result<BackoffMicros, StoreError> {
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

pub(crate) fn validate_fuel(fuel_used: Option<i64>) -> Result<(), StoreError> {
    match fuel_used {
        Some(f) if f < 0 => Err(StoreError::InvalidInput {
            field: "fuel_used",
            message: format!("{f} is negative"),
        }),
        _ => Ok(()),
    }
}

/// `items` sorted by job id, the first of any repeated id kept: the order the batched
/// statements bind their arrays in. Sorted ids let a statement find a row's position
/// with `width_bucket` (a binary search) where `array_position` walked the array for
/// every row, which made a batch's look-ups grow with its square (≈ 5 % of the CPU of a
/// drain, whose completions come 150–300 at a time). Callers report results in their
/// own input order (`in_input_order`), so this order never reaches them.
pub(crate) fn in_id_order<T>(items: impl IntoIterator<Item = T>, id: impl Fn(&T) -> i64) -> Vec<T> {
    let mut items: Vec<T> = items.into_iter().collect();
    // Stable: of two outcomes for one job, the first given stays first, and is the one
    // kept (as `array_position`, which found the first, did).
    items.sort_by_key(|item| id(item));
    items.dedup_by_key(|item| id(item));
    items
}

/// The arrays `complete_many.sql` binds, one element per outcome, in job id order
/// ([`in_id_order`]).
pub(crate) struct CompleteColumns<'a> {
    ids: Vec<i64>,
    tokens: Vec<uuid::Uuid>,
    outputs: Vec<&'a [u8]>,
    fuel: Vec<Option<i64>>,
    logs: Option<Vec<Option<&'a [u8]>>>,
    dropped: Vec<i64>,
}

impl<'a> CompleteColumns<'a> {
    pub(crate) fn of(
        outcomes: impl IntoIterator<Item = &'a (Lease, Completion)>,
    ) -> Result<Self, StoreError> {
        let outcomes = in_id_order(outcomes, |(lease, _)| lease.job_id);
        let mut ids = Vec::with_capacity(outcomes.len());
        let mut tokens = Vec::with_capacity(outcomes.len());
        let mut outputs = Vec::with_capacity(outcomes.len());
        let mut fuel = Vec::with_capacity(outcomes.len());
        let mut logs = Vec::with_capacity(outcomes.len());
        for (lease, done) in outcomes {
            validate_fuel(done.fuel_used)?;
            ids.push(lease.job_id);
            tokens.push(lease.token);
            outputs.push(done.output.as_slice());
            fuel.push(done.fuel_used);
            logs.push(done.log.as_ref());
        }
        let (logs, dropped) = log_columns(logs.into_iter());
        Ok(CompleteColumns {
            ids,
            tokens,
            outputs,
            fuel,
            logs,
            dropped,
        })
    }

    /// The statement, bound; it returns the ids it applied to.
    pub(crate) fn query(
        &self,
    ) -> sqlx::query::QueryScalar<'_, sqlx::Postgres, i64, sqlx::postgres::PgArguments> {
        sqlx::query_scalar(COMPLETE_MANY)
            .bind(&self.ids)
            .bind(&self.tokens)
            .bind(&self.outputs)
            .bind(&self.fuel)
            .bind(&self.logs)
            .bind(&self.dropped)
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
    /// applied regardless). A batch with follow-up jobs is written in one transaction
    /// with them (`follow_ups.rs`); an entry whose follow-ups were refused is
    /// `Err(FollowUpRefused)` and left running.
    #[tracing::instrument(name = "store.complete_many", level = "debug", skip_all, fields(count = outcomes.len()))]
    pub async fn complete_many(
        &self,
        outcomes: &[(Lease, Completion)],
    ) -> Result<Vec<Result<(), StoreError>>, StoreError> {
        if outcomes.iter().any(|(_, done)| !done.follow_ups.is_empty()) {
            return self.complete_with_follow_ups(outcomes).await;
        }
        let columns = CompleteColumns::of(outcomes)?;
        let applied: Vec<i64> = columns.query().fetch_all(&self.pool).await?;
        let applied = applied.into_iter().map(|id| (id, ())).collect();
        let ids = outcomes.iter().map(|(lease, _)| lease.job_id).collect();
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
        // Each failure with its validated (base µs, cap µs, jitter), in job id order.
        let sorted = in_id_order(outcomes.iter().zip(backoffs), |((l, _), _)| l.job_id);
        let (outcomes, backoffs): (Vec<&(Lease, Failure)>, Vec<BackoffMicros>) =
            sorted.into_iter().unzip();
        let backoff =
            |part: fn(&BackoffMicros) -> f64| -> Vec<f64> { backoffs.iter().map(part).collect() };
        let (logs, dropped) = log_columns(outcomes.iter().map(|(_, f)| f.log.as_ref()));
        let moved: Vec<(i64, JobState, DateTime<Utc>, i64)> = sqlx::query_as(FAIL_MANY)
            .bind(outcomes.iter().map(|(l, _)| l.job_id).collect::<Vec<_>>())
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
            .bind(&logs)
            .bind(&dropped)
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
    /// requested. `reason` becomes `last_error`; `log` (what the attempt logged, if
    /// anything) is stored with it. Returns [`AttemptOutcome::Cancelled`] (the one place
    /// it can go), like every lease holder's transition.
    #[tracing::instrument(name = "store.mark_cancelled", level = "debug", skip_all, fields(job_id = lease.job_id))]
    pub async fn mark_cancelled(
        &self,
        lease: &Lease,
        reason: &str,
        log: Option<&AttemptLog>,
    ) -> Result<AttemptOutcome, StoreError> {
        let (log, dropped) = log_params(log);
        let row: Option<i64> = sqlx::query_scalar(MARK_CANCELLED)
            .bind(lease.job_id)
            .bind(lease.token)
            .bind(text::lossy(reason).as_ref())
            .bind(log)
            .bind(dropped)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|_| AttemptOutcome::Cancelled)
            .ok_or(StoreError::LeaseLost {
                job_id: lease.job_id,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::in_id_order;

    #[test]
    fn batches_are_bound_in_id_order_and_a_repeated_job_keeps_its_first_outcome() {
        let given = [(7, "a"), (3, "b"), (9, "c"), (3, "d"), (1, "e")];
        assert_eq!(
            in_id_order(given, |(id, _)| *id),
            [(1, "e"), (3, "b"), (7, "a"), (9, "c")]
        );
        assert!(in_id_order(Vec::<(i64, ())>::new(), |(id, _)| *id).is_empty());
    }
}
