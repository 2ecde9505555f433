//! A run that suspended (contract 0.3, docs/durable.md): the sandbox's cause made into
//! the store's [`Suspension`] — when the job wakes, and what it waits for — with the
//! follow-up jobs a durable run buffered so far, and the failure written instead if the
//! store refuses a snooze past the limit.
//!
//! Must not: write anything (the completer does) or decide where the job goes (the
//! store's fenced statement does: waiting, pending, or cancelled if a cancel came).

use chrono::{DateTime, Utc};
use sluice_sandbox::Suspension as Cause;
use sluice_store::{Backoff, Failure, NewJob, Suspension, Wake};

use super::completer::over_snooze_limit;

/// Snoozes one job may take before a snooze fails the attempt instead, for types that
/// set no `--max-snoozes` (the suggested default of `wit/README.md`).
pub(super) const MAX_SNOOZES: i32 = 25;

/// What to write for a run that suspended with `cause`: the suspension, and the failure
/// written instead if the store refuses a snooze past the limit
/// (`Transition::Suspend`'s two halves).
pub(super) fn transition(
    cause: Cause,
    follow_ups: Vec<NewJob>,
    fuel_used: Option<i64>,
    backoff: Backoff,
) -> (Suspension, Failure) {
    let reason = cause.to_string();
    let wake = match cause {
        Cause::Sleep { until_ms } => Wake::At(instant(until_ms)),
        Cause::Signal { name, deadline_ms } => Wake::Signal {
            name,
            deadline: deadline_ms.map(instant),
        },
        Cause::Jobs { ids } => Wake::Jobs {
            ids: ids
                .into_iter()
                .map(|id| i64::try_from(id).unwrap_or(i64::MAX))
                .collect(),
        },
        Cause::Snooze { delay } => Wake::Snooze {
            delay,
            max_snoozes: MAX_SNOOZES,
        },
    };
    let over_limit = Failure {
        error: over_snooze_limit(MAX_SNOOZES),
        fatal: false,
        backoff,
        fuel_used,
        log: None,
    };
    (
        Suspension {
            wake,
            follow_ups,
            log: None,
            fuel_used,
            reason,
        },
        over_limit,
    )
}

/// Milliseconds since the Unix epoch as an instant (the far past or future when out of
/// range: an instant past due wakes at once).
fn instant(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or(if ms < 0 {
        DateTime::<Utc>::MIN_UTC
    } else {
        DateTime::<Utc>::MAX_UTC
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn each_cause_wakes_as_it_asks_and_names_itself() {
        let backoff = Backoff::default();
        let (s, _) = transition(
            Cause::Sleep { until_ms: 60_000 },
            Vec::new(),
            Some(3),
            backoff,
        );
        assert_eq!(
            s.wake,
            Wake::At(DateTime::from_timestamp_millis(60_000).unwrap())
        );
        assert_eq!(s.reason, "sleep until 1970-01-01T00:01:00.000Z");
        assert_eq!(s.fuel_used, Some(3));
        let (s, over) = transition(
            Cause::Snooze {
                delay: Duration::from_secs(2),
            },
            Vec::new(),
            None,
            backoff,
        );
        assert_eq!(
            s.wake,
            Wake::Snooze {
                delay: Duration::from_secs(2),
                max_snoozes: MAX_SNOOZES
            }
        );
        assert!(!over.fatal && over.error.contains("25"), "{}", over.error);
    }
}
