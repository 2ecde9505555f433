//! What ends a durable wait (issue #43): signals sent to a job, their consumption by the
//! run that awaits them, and the waker that moves `waiting` jobs back to `pending`.
//!
//! Owns: `sql/waits/` — sending a signal for the CLI and HTTP (through `sluice.signal`,
//! migration 0027, the same function applications call inside their own transactions),
//! taking one under a run's lease at a journal sequence number, and the waker's
//! statement. Must not: consume a signal without the lease's fence, or wake a job that is
//! not `waiting` (cancelled, finished and running jobs are left as they are).

use std::time::Duration;

use sqlx::postgres::PgDatabaseError;
use uuid::Uuid;

use crate::listen::JOBS_CHANNEL;
use crate::suspend::check_signal_name;
use crate::types::JobState;
use crate::{Store, StoreError, micros, text};

/// Sends a signal through `sluice.signal(...)`, tenant-scoped.
const SEND_SIGNAL: &str = include_str!("../sql/waits/send_signal.sql");

/// Takes a signal at a sequence number, fenced on the lease.
const TAKE_SIGNAL: &str = include_str!("../sql/waits/take_signal.sql");

/// waiting → pending for jobs whose cause has come.
const WAKE_WAITING: &str = include_str!("../sql/waits/wake_waiting.sql");

impl Store {
    /// Sends the signal `name` to job `job_id` (`sluice jobs signal`, `POST
    /// /v1/jobs/{id}/signals/{name}`); `payload: None` sends it without one (the await
    /// then returns the JSON text `null`). `tenant: Some` scopes the job: another tenant's
    /// is `NotFound`, as a missing one. A finished job is refused with
    /// `IllegalTransition` naming its state; a payload over the tenant's payload limit
    /// (else this host's default) `PayloadTooLarge`. Returns true when it woke the job (it was
    /// waiting for that name); otherwise the signal is kept until an await takes it.
    #[tracing::instrument(name = "store.send_signal", level = "debug", skip_all, fields(job_id))]
    pub async fn send_signal(
        &self,
        tenant: Option<&str>,
        job_id: i64,
        name: &str,
        payload: Option<&serde_json::Value>,
    ) -> Result<bool, StoreError> {
        check_signal_name("name", name)?;
        if let Some(payload) = payload {
            text::check_json("payload", payload)?;
        }
        if !tenant.is_none_or(text::findable) {
            return Err(StoreError::job_not_found(job_id));
        }
        let result: Result<Option<(Option<bool>, i64, i64)>, sqlx::Error> =
            sqlx::query_as(SEND_SIGNAL)
                .bind(job_id)
                .bind(tenant)
                .bind(name)
                .bind(payload.map(sqlx::types::Json))
                .bind(self.default_max_payload_bytes)
                .fetch_optional(&self.pool)
                .await;
        match result {
            Ok(Some((Some(woke), _, _))) => Ok(woke),
            Ok(Some((None, size, limit))) => Err(StoreError::PayloadTooLarge { size, limit }),
            Ok(None) => Err(StoreError::job_not_found(job_id)),
            Err(error) => Err(signal_error(job_id, error)),
        }
    }

    /// Takes a signal `name` for the await-signal call at journal sequence number `seq`
    /// of the job running under `lease`: the one already taken at `seq` if any (a run
    /// replaying to the same call gets the same signal), else the oldest not taken yet,
    /// which is then marked taken at `seq`. Returns its payload as JSON text (`null` when
    /// sent without one), `None` when there is none. `LeaseLost` when the job does not
    /// run under `lease` (nothing taken). Make the result durable in the journal in the
    /// same run: a signal taken by a run that never journals it is taken again, by the
    /// same `seq`, on replay.
    #[tracing::instrument(name = "store.take_signal", level = "debug", skip(self, lease))]
    pub async fn take_signal(
        &self,
        job_id: i64,
        lease: Uuid,
        name: &str,
        seq: i32,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        check_signal_name("name", name)?;
        if seq < 0 {
            return Err(StoreError::InvalidInput {
                field: "seq",
                message: format!("a journal sequence number is not negative, got {seq}"),
            });
        }
        let (fenced, found, payload): (bool, bool, Option<String>) = sqlx::query_as(TAKE_SIGNAL)
            .bind(job_id)
            .bind(lease)
            .bind(name)
            .bind(seq)
            .fetch_one(&self.pool)
            .await?;
        if !fenced {
            return Err(StoreError::LeaseLost { job_id });
        }
        Ok(found.then(|| payload.unwrap_or_else(|| "null".into()).into_bytes()))
    }

    /// The waker (one host, every second or so): moves to `pending` up to `limit`
    /// waiting jobs whose `run_at` is at most `lookahead` away (they keep it: claimable
    /// from then on), whose awaited signal has come, or whose awaited jobs have all
    /// finished (those are due now), and tells the claimers. Returns how many it woke.
    #[tracing::instrument(name = "store.wake_waiting", level = "debug", skip(self))]
    pub async fn wake_waiting(&self, lookahead: Duration, limit: i64) -> Result<u64, StoreError> {
        if limit < 1 {
            return Err(StoreError::InvalidInput {
                field: "limit",
                message: format!("must be at least 1, got {limit}"),
            });
        }
        let lookahead = micros("lookahead", lookahead, false)?;
        let (woken, _): (i64, i64) = sqlx::query_as(WAKE_WAITING)
            .bind(lookahead)
            .bind(limit)
            .bind(JOBS_CHANNEL)
            .fetch_one(&self.pool)
            .await?;
        Ok(woken as u64)
    }
}

/// The error of `sluice.signal(...)` for people and callers: a missing job (deleted
/// meanwhile) is `NotFound`, a finished one `IllegalTransition` with its state, a payload
/// over the database's limit `PayloadTooLarge`, an invalid argument `InvalidInput`
/// naming it.
fn signal_error(job_id: i64, error: sqlx::Error) -> StoreError {
    let Some(db) = error
        .as_database_error()
        .and_then(|db| db.try_downcast_ref::<PgDatabaseError>())
    else {
        return error.into();
    };
    match db.code() {
        "P0002" => StoreError::job_not_found(job_id),
        "55000" => match db.detail().and_then(|d| d.parse::<JobState>().ok()) {
            Some(state) => StoreError::IllegalTransition {
                id: job_id,
                state,
                action: "signal (a finished job takes no signals)",
            },
            None => error.into(),
        },
        "54000" => {
            let (size, limit) = db
                .detail()
                .and_then(|d| d.split_once('/'))
                .and_then(|(size, limit)| Some((size.parse().ok()?, limit.parse().ok()?)))
                .unwrap_or_default();
            StoreError::PayloadTooLarge { size, limit }
        }
        "22023" => StoreError::InvalidInput {
            field: if db.column() == Some("name") {
                "name"
            } else {
                "job_id"
            },
            message: db.message().to_owned(),
        },
        _ => error.into(),
    }
}
