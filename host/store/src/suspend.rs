//! Suspension: a run that ends itself with a recorded cause instead of an outcome (durable
//! waits and snoozes, issue #43, `wit/README.md` "sluice:task@0.3.0"). The job leaves
//! `running` for `waiting` (a durable sleep, an awaited signal, awaited jobs) or
//! `pending` (a snooze, or a wait whose cause is already there), without spending the
//! attempt.
//!
//! Owns: the suspension's transaction: the fenced lock (`finish/suspend_lock.sql`), the
//! snooze limit, the follow-up jobs buffered so far (inserted with it, skipping those a
//! replayed run asked for again, which exist already) and the one statement that moves the
//! job (`finish/suspend.sql`), which also archives the attempt as `suspended` with its log.
//! Must not: write anything when the lease does not hold or the snooze limit is reached,
//! spend the attempt, or insert a follow-up job twice for one (parent, seq).

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::attempt_logs::{AttemptLog, log_params};
use crate::enqueue::NewJob;
use crate::finish::validate_fuel;
use crate::listen::JOBS_CHANNEL;
use crate::types::{JobState, Lease};
use crate::{Store, StoreError, text, time_range};

/// The longest signal name, in characters (`sluice.signal` refuses longer ones too).
pub const MAX_SIGNAL_NAME_CHARS: usize = 128;

/// The most job ids one await may name.
pub const MAX_AWAITED_JOBS: usize = 10_000;

/// How a run suspends, and what it leaves behind (see [`Store::suspend`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Suspension {
    /// What wakes the job.
    pub wake: Wake,
    /// The follow-up jobs buffered so far, inserted in the suspension's transaction. Each
    /// one's `parent` is set by the caller (`Parent { id: the job's id, seq: the journal
    /// sequence number of its enqueue call }`): a replayed run that buffers the same call
    /// again creates nothing (the child exists already). Children of type
    /// [`EVENT_JOB_TYPE`] are events, sent in the same transaction; one without an
    /// idempotency key gets `sluice.follow-up/{parent}/{seq}`, so a replay sends it once.
    /// None is inserted when the job ends `cancelled`.
    pub follow_ups: Vec<NewJob>,
    /// What the run logged (`None`: nothing, and nothing more is written).
    pub log: Option<AttemptLog>,
    /// Fuel the run burned, kept in the attempt history (`None`: not measured).
    pub fuel_used: Option<i64>,
    /// The cause for people, kept as the history row's error (outcome `suspended`):
    /// "sleep until 2026-…", "await signal `approve`".
    pub reason: String,
}

/// What wakes a suspended job.
#[derive(Clone, Debug, PartialEq)]
pub enum Wake {
    /// A durable sleep: `waiting` until this instant (`pending` at once if it has passed).
    At(DateTime<Utc>),
    /// An await-signal: `waiting` until a signal `name` is sent or `deadline` passes
    /// (`None`: no deadline); `pending` at once if an unconsumed one is already there.
    Signal {
        /// The signal name, 1 to [`MAX_SIGNAL_NAME_CHARS`] characters.
        name: String,
        /// When to give up waiting (the await then returns `none`).
        deadline: Option<DateTime<Utc>>,
    },
    /// An await-jobs: `waiting` until every job of `ids` has finished (completed, dead
    /// or cancelled); `pending` at once if they all have (or are gone).
    Jobs {
        /// The awaited jobs, at most [`MAX_AWAITED_JOBS`].
        ids: Vec<i64>,
    },
    /// A snooze: `pending` again after `delay`, counting one more snooze; refused with
    /// [`Suspended::SnoozeLimit`] (nothing written) when the job already snoozed as many
    /// times as its type's `max_snoozes` allows, or `max_snoozes` when the type sets none.
    Snooze {
        /// How long from now (database time).
        delay: Duration,
        /// The host's default limit, for types without `max_snoozes`.
        max_snoozes: i32,
    },
}

/// Where a suspended job went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suspended {
    /// `waiting` for its cause.
    Waiting,
    /// `pending`: snoozed, or woken at once (its cause was already there).
    Pending,
    /// A cancel was requested meanwhile: `cancelled` (no follow-up job inserted).
    Cancelled,
    /// The snooze would pass the limit: nothing was written and the job still runs under
    /// its lease; the caller fails the attempt (retryably, naming the limit).
    SnoozeLimit {
        /// The limit that applied: the type's `max_snoozes`, else the caller's.
        limit: i32,
    },
}

/// Locks the running job, fenced, and reads its snoozes and cancel request.
const SUSPEND_LOCK: &str = include_str!("../sql/finish/suspend_lock.sql");

/// The suspension statement: running → waiting | pending | cancelled.
const SUSPEND: &str = include_str!("../sql/finish/suspend.sql");

/// The statement's parameters for one wake: kind, instant, name, ids, delay in µs.
type WakeParams<'a> = (
    &'static str,
    Option<DateTime<Utc>>,
    Option<&'a str>,
    Option<&'a [i64]>,
    Option<i64>,
);

/// Checks a signal name: 1 to [`MAX_SIGNAL_NAME_CHARS`] characters, no NUL.
pub(crate) fn check_signal_name(field: &'static str, name: &str) -> Result<(), StoreError> {
    let n = name.chars().count();
    if n == 0 || n > MAX_SIGNAL_NAME_CHARS {
        return Err(StoreError::InvalidInput {
            field,
            message: format!(
                "a signal name must be 1 to {MAX_SIGNAL_NAME_CHARS} characters, got {n}"
            ),
        });
    }
    text::check(field, name)
}

fn wake_params(wake: &Wake) -> Result<WakeParams<'_>, StoreError> {
    Ok(match wake {
        Wake::At(at) => {
            time_range::check_run_at("wake.at", *at)?;
            ("at", Some(*at), None, None, None)
        }
        Wake::Signal { name, deadline } => {
            check_signal_name("wake.signal", name)?;
            if let Some(at) = deadline {
                time_range::check_run_at("wake.deadline", *at)?;
            }
            ("signal", *deadline, Some(name.as_str()), None, None)
        }
        Wake::Jobs { ids } => {
            if ids.len() > MAX_AWAITED_JOBS {
                return Err(StoreError::InvalidInput {
                    field: "wake.jobs",
                    message: format!(
                        "at most {MAX_AWAITED_JOBS} jobs can be awaited at once, got {}",
                        ids.len()
                    ),
                });
            }
            ("jobs", None, None, Some(ids.as_slice()), None)
        }
        Wake::Snooze { delay, max_snoozes } => {
            if *max_snoozes < 0 {
                return Err(StoreError::InvalidInput {
                    field: "wake.max_snoozes",
                    message: format!("must not be negative, got {max_snoozes}"),
                });
            }
            let us = time_range::check_delay("wake.delay", *delay)?;
            ("snooze", None, None, None, Some(us))
        }
    })
}

impl Store {
    /// Ends the run under `lease` as suspended (see [`Suspension`] and [`Wake`]): in one
    /// transaction, fenced on the lease like a completion, the buffered follow-up jobs are
    /// inserted and the job goes `waiting` (or `pending`, or `cancelled`), its attempt
    /// given back and archived as `suspended`. `LeaseLost` when the lease no longer holds
    /// (nothing written); `FollowUpRefused` when a follow-up cannot be inserted (nothing
    /// written, the job still runs under its lease: fail the attempt instead);
    /// `Ok(SnoozeLimit)` when a snooze would pass its limit, the type's `max_snoozes` or
    /// else [`Wake::Snooze`]'s (nothing written).
    #[tracing::instrument(name = "store.suspend", level = "debug", skip_all, fields(job_id = lease.job_id))]
    pub async fn suspend(
        &self,
        lease: &Lease,
        suspension: &Suspension,
    ) -> Result<Suspended, StoreError> {
        let job_id = lease.job_id;
        let (kind, at, name, ids, delay_us) = wake_params(&suspension.wake)?;
        validate_fuel(suspension.fuel_used)?;
        let reason = text::lossy(&suspension.reason);
        for (i, child) in suspension.follow_ups.iter().enumerate() {
            match child.parent {
                Some(parent) if parent.id == job_id => {}
                _ => {
                    return Err(StoreError::InvalidInput {
                        field: "follow_ups.parent",
                        message: format!(
                            "follow-up job {i} must name job {job_id} as its parent, with its enqueue call's sequence number"
                        ),
                    });
                }
            }
        }

        let mut tx = self.pool.begin().await?;
        let held: Option<(i32, bool, Option<i32>)> = sqlx::query_as(SUSPEND_LOCK)
            .bind(job_id)
            .bind(lease.token)
            .fetch_optional(&mut *tx)
            .await?;
        let Some((snoozes, cancel_requested, type_limit)) = held else {
            tx.rollback().await?;
            return Err(StoreError::LeaseLost { job_id });
        };
        if let Wake::Snooze { max_snoozes, .. } = suspension.wake
            && !cancel_requested
            && snoozes >= type_limit.unwrap_or(max_snoozes)
        {
            tx.rollback().await?;
            return Ok(Suspended::SnoozeLimit {
                limit: type_limit.unwrap_or(max_snoozes),
            });
        }
        if !cancel_requested
            && let Err(error) = self
                .insert_children_once(&mut tx, &suspension.follow_ups)
                .await
        {
            tx.rollback().await?;
            return Err(match error {
                StoreError::UnknownJobType { .. }
                | StoreError::UnknownTenant(_)
                | StoreError::PayloadTooLarge { .. }
                | StoreError::InvalidInput { .. } => StoreError::FollowUpRefused {
                    job_id,
                    message: error.to_string(),
                },
                other => other,
            });
        }
        let (log, dropped) = log_params(suspension.log.as_ref());
        let moved: Option<(i64, JobState, i64)> = sqlx::query_as(SUSPEND)
            .bind(job_id)
            .bind(lease.token)
            .bind(kind)
            .bind(at)
            .bind(name)
            .bind(ids)
            .bind(delay_us)
            .bind(reason.as_ref())
            .bind(suspension.fuel_used)
            .bind(log)
            .bind(dropped)
            .bind(JOBS_CHANNEL)
            .fetch_optional(&mut *tx)
            .await?;
        let Some((_, state, _)) = moved else {
            tx.rollback().await?;
            return Err(StoreError::LeaseLost { job_id });
        };
        tx.commit().await?;
        Ok(match state {
            JobState::Waiting => Suspended::Waiting,
            JobState::Cancelled => Suspended::Cancelled,
            _ => Suspended::Pending,
        })
    }
}
