//! The instants a job may be due at, and the delays that lead there.
//!
//! Postgres stores `timestamptz` from 4713 BC to 294276 AD plus `±infinity`; chrono (and
//! so every reader in Rust) stops at year ±262143 and has no infinity. A `run_at` outside
//! what every reader can decode would break each listing, stats query and metrics
//! refresh that meets the row, for every tenant. So `run_at` is held to
//! [`RUN_AT_MIN`]..=[`RUN_AT_MAX`] where it enters (here for the Rust paths, in
//! `sluice.enqueue(...)` for SQL, and by the CHECK `jobs_run_at_range`, migration 0010),
//! and a delay (and a job type's backoff) to at most [`MAX_DELAY`].
//!
//! Owns: those bounds and their check. Readers select `run_at` clamped to the same
//! bounds instead of the raw column (`least(greatest(run_at, timestamptz '1970-01-01
//! 00:00:00+00'), timestamptz '9999-12-31 23:59:59.999999+00')`, written out in
//! `sql/admin/get_job.sql`, `sql/admin/list_jobs.sql`, `sql/depth/next_due.sql` and
//! `sql/stats/stats.sql`), so a row written before the constraint can never make a
//! reader fail. Must not: read the host clock
//! (a delay is checked by its length only; the database adds it to its own `now()`).

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::StoreError;

/// Earliest accepted `run_at`: 1970-01-01T00:00:00Z (seconds since the Unix epoch).
pub const RUN_AT_MIN: DateTime<Utc> = DateTime::UNIX_EPOCH;

/// Latest accepted `run_at`: 9999-12-31T23:59:59.999999Z (four-digit years).
pub const RUN_AT_MAX: DateTime<Utc> = match DateTime::from_timestamp(253_402_300_799, 999_999_000) {
    Some(t) => t,
    None => panic!("9999-12-31T23:59:59.999999Z is a valid instant"),
};

/// Longest accepted delay: 100 years of 365.25 days.
pub const MAX_DELAY: Duration = Duration::from_secs(36_525 * 24 * 3600);

/// Refuses an instant outside [`RUN_AT_MIN`]..=[`RUN_AT_MAX`].
pub(crate) fn check_run_at(field: &'static str, at: DateTime<Utc>) -> Result<(), StoreError> {
    if (RUN_AT_MIN..=RUN_AT_MAX).contains(&at) {
        return Ok(());
    }
    Err(StoreError::InvalidInput {
        field,
        message: format!(
            "{} is outside the accepted range 1970-01-01T00:00:00Z..=9999-12-31T23:59:59.999999Z",
            at.to_rfc3339()
        ),
    })
}

/// Refuses a delay (or backoff) longer than [`MAX_DELAY`]; returns it in microseconds.
pub(crate) fn check_delay(field: &'static str, delay: Duration) -> Result<i64, StoreError> {
    if delay > MAX_DELAY {
        return Err(StoreError::InvalidInput {
            field,
            message: format!(
                "{}s is longer than the longest accepted delay, 100 years ({}s)",
                delay.as_secs(),
                MAX_DELAY.as_secs()
            ),
        });
    }
    crate::micros(field, delay, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bounds_are_the_documented_instants() {
        assert_eq!(RUN_AT_MIN.to_rfc3339(), "1970-01-01T00:00:00+00:00");
        assert_eq!(RUN_AT_MAX.to_rfc3339(), "9999-12-31T23:59:59.999999+00:00");
        assert_eq!(MAX_DELAY.as_secs(), 3_155_760_000);
    }

    #[test]
    fn instants_inside_pass_and_outside_are_refused_naming_the_field() {
        assert!(check_run_at("run_at", RUN_AT_MIN).is_ok());
        assert!(check_run_at("run_at", RUN_AT_MAX).is_ok());
        let before = RUN_AT_MIN - chrono::TimeDelta::microseconds(1);
        let after = RUN_AT_MAX + chrono::TimeDelta::microseconds(1);
        for at in [
            before,
            after,
            DateTime::<Utc>::MIN_UTC,
            DateTime::<Utc>::MAX_UTC,
        ] {
            let err = check_run_at("run_at", at).unwrap_err().to_string();
            assert!(err.starts_with("invalid run_at: "), "{err}");
        }
    }

    #[test]
    fn delays_up_to_a_hundred_years_pass() {
        assert_eq!(check_delay("delay", Duration::ZERO).unwrap(), 0);
        assert!(check_delay("delay", MAX_DELAY).is_ok());
        let err = check_delay("delay", MAX_DELAY + Duration::from_secs(1)).unwrap_err();
        assert!(err.to_string().starts_with("invalid delay: "), "{err}");
        assert!(check_delay("delay", Duration::MAX).is_err());
    }
}
