//! One attempt of a claimed job that runs a component (`slots` sends a webhook delivery
//! elsewhere): resolve its type, run it in the sandbox, decide the queue transition
//! ([`transition`], pure), and hand it to the completer.
//!
//! Owns the mapping from sandbox outcomes and interrupt reasons to transitions
//! (complete, fail, release, cancel, or nothing when the lease was lost). Must not write
//! to the store (the completer does) or decide queue policy (backoff, attempt counting,
//! retry versus dead): the store's statements do that.

use sluice_sandbox::{Failure as SandboxFailure, JobInput, Outcome, RunReport};
use sluice_store::{
    AttemptLog, AttemptOutcome, Backoff, ClaimedJob, Completion, Failure, NewJob, Parent,
};
use tracing::{Instrument, info, warn};

use super::attempt::{AttemptContext, Executing, Interrupt, StopReason, record, span as job_span};
use super::attempt_trace::AttemptSpan;
use super::completer::{Recorded, Transition};
use super::durable;
use super::follow_ups::to_new_job;
use super::registry::ResolveError;
use super::suspension;
use super::usage_meter::counts_of;

/// The queue transition for what the sandbox reported (with the follow-up jobs a
/// completed attempt asked for, as the store takes them), given why (if at all) the
/// attempt was interrupted; `None`: record nothing (the lease was lost). Pure.
pub(super) fn transition(
    outcome: Outcome,
    follow_ups: Result<Vec<NewJob>, String>,
    fuel_used: Option<i64>,
    stop: Option<StopReason>,
    backoff: Backoff,
) -> Option<Transition> {
    Some(match outcome {
        Outcome::Completed { output } => match follow_ups {
            Ok(follow_ups) => Transition::Complete(
                Completion {
                    output,
                    fuel_used,
                    follow_ups,
                    log: None,
                },
                backoff,
            ),
            // Checked when the guest asked, so only a host bug gets here.
            Err(why) => Transition::Fail(Failure {
                error: format!("follow-up jobs refused: {why}"),
                fatal: false,
                backoff,
                fuel_used,
                log: None,
            }),
        },
        Outcome::Failed(SandboxFailure::Cancelled) => match stop {
            Some(StopReason::Shutdown) => Transition::Release("host shutting down"),
            Some(StopReason::LeaseLost) => return None,
            Some(StopReason::Cancelled) | None => Transition::Cancel("cancelled".into(), None),
        },
        Outcome::Failed(failure) => Transition::Fail(Failure {
            error: failure.reason(),
            fatal: failure.is_fatal(),
            backoff,
            fuel_used,
            log: None,
        }),
        Outcome::Suspended(why) => match follow_ups {
            Ok(follow_ups) => {
                let (suspension, over_limit) =
                    suspension::transition(why, follow_ups, fuel_used, backoff);
                Transition::Suspend(suspension, over_limit)
            }
            Err(why) => Transition::Fail(Failure {
                error: format!("follow-up jobs refused: {why}"),
                fatal: false,
                backoff,
                fuel_used,
                log: None,
            }),
        },
    })
}

/// The transition for a job whose type cannot be run: dead if the type is gone for
/// good, released (attempt given back) if the registry could not be read. Pure.
pub(super) fn unrunnable(error: &ResolveError) -> Transition {
    match error {
        ResolveError::Permanent(message) => Transition::Fail(Failure::fatal(message.clone())),
        ResolveError::Infrastructure(_) => {
            Transition::Release("infrastructure: job type unavailable")
        }
        ResolveError::NotHere(_) => Transition::Release("not runnable on this host"),
        ResolveError::Secret(message) => Transition::Fail(Failure::retry(message.clone())),
    }
}

/// Run one claimed job to the end and record what happened.
pub(super) async fn run_attempt(
    ctx: AttemptContext,
    job: ClaimedJob,
    interrupt: Interrupt,
    executing: Executing,
) -> Recorded {
    let AttemptContext {
        completer,
        registry,
        metrics,
        usage,
        tracer,
    } = ctx;
    let _in_progress = metrics.attempt_started();
    let mut traced = AttemptSpan::start(&tracer, &job, "attempt");
    let mut fuel = None;
    let mut error = None;
    let ClaimedJob {
        id,
        tenant,
        job_type,
        payload,
        attempt,
        max_attempts,
        lease,
        ..
    } = job;
    let span = || job_span(id, &tenant, &job_type, attempt);
    let resolved = match registry.resolve(&tenant, &job_type).await {
        // A durable type: the job's journal and pinned component (nothing else pays this).
        Ok(resolved) => match resolved.durable {
            Some(durable) => {
                let patience = completer.patience();
                durable::prepare(&registry, resolved, durable, (id, lease.token), patience).await
            }
            None => Ok(resolved),
        },
        Err(error) => Err(error),
    };
    let recorded = match resolved {
        Err(error) => {
            drop(executing);
            match &error {
                ResolveError::Infrastructure(error) => {
                    warn!(error = %format!("{error:#}"), "cannot resolve job type; releasing the job");
                }
                ResolveError::NotHere(why) => warn!(%why, "releasing the job for another host"),
                ResolveError::Secret(why) => warn!(%why, "failing the attempt"),
                ResolveError::Permanent(_) => {}
            }
            record(&completer, lease, Some(unrunnable(&error)))
                .instrument(span())
                .await
        }
        Ok(resolved) => {
            let payload_bytes = payload.len();
            let input = JobInput {
                id: id as u64,
                job_type: job_type.clone(),
                tenant: tenant.clone(),
                attempt: attempt as u32,
                max_attempts: max_attempts as u32,
                payload,
                trace: traced.sandbox.take(),
            };
            let report = registry
                .sandbox()
                .run_with(
                    &resolved.component,
                    input,
                    &resolved.limits,
                    resolved.grants.clone(),
                    interrupt.token(),
                )
                .await;
            drop(executing);
            metrics.sandbox_ran(&tenant, &job_type, &report);
            usage.add(&tenant, &job_type, &counts_of(&report, payload_bytes));
            if report.journal.is_some() {
                durable::give_back(registry.store(), &report, id, lease.token).await;
            }
            let fuel_used = Some(report.fuel_used.min(i64::MAX as u64) as i64);
            fuel = Some(report.fuel_used);
            if let Outcome::Failed(failure) = &report.outcome
                && traced.is_recording()
            {
                error = Some(failure.reason());
            }
            let RunReport {
                outcome,
                logs,
                logs_dropped_bytes,
                follow_ups,
                ..
            } = report;
            // Stored with the attempt's end; `None` (nothing stored) when it logged nothing.
            let log = AttemptLog::captured(logs, logs_dropped_bytes);
            let children = follow_ups.len();
            // A suspension inserts them itself: each names its parent and its place among
            // the job's follow-ups (the same in every run, so a replay creates none twice).
            let suspended = matches!(outcome, Outcome::Suspended(_));
            let follow_ups = follow_ups
                .into_iter()
                .enumerate()
                .map(|(seq, asked)| {
                    let mut job = to_new_job(&tenant, asked)?;
                    if suspended {
                        let seq = i32::try_from(seq).unwrap_or(i32::MAX);
                        job.parent = Some(Parent { id, seq });
                    }
                    Ok(job)
                })
                .collect();
            // The common case (completed, no guest output) logs nothing: no span for it.
            let quiet = log.is_none() && matches!(outcome, Outcome::Completed { .. });
            let next = transition(
                outcome,
                follow_ups,
                fuel_used,
                interrupt.reason(),
                resolved.backoff,
            );
            let recording = async {
                log_guest_output(log.as_ref());
                record(&completer, lease, next.map(|next| next.with_log(log))).await
            };
            let recorded = if quiet {
                recording.await
            } else {
                recording.instrument(span()).await
            };
            if recorded == Some(AttemptOutcome::Completed) {
                metrics.follow_ups_written(&tenant, &job_type, children);
            }
            recorded
        }
    };
    metrics.attempt_recorded(&tenant, &job_type, attempt, recorded);
    traced.end(
        recorded.map_or("lost", AttemptOutcome::as_str),
        fuel,
        error.as_deref(),
    );
    recorded
}

fn log_guest_output(log: Option<&AttemptLog>) {
    let Some(log) = log else {
        return;
    };
    let text = String::from_utf8_lossy(&log.bytes);
    for line in text.lines() {
        info!(target: "sluice::guest", "{line}");
    }
    if log.dropped_bytes > 0 {
        info!(target: "sluice::guest", "(log truncated at the per-attempt cap)");
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn backoff() -> Backoff {
        Backoff {
            base: Duration::from_millis(10),
            cap: Duration::from_secs(1),
            jitter: 0.0,
        }
    }

    fn cancelled() -> Outcome {
        Outcome::Failed(SandboxFailure::Cancelled)
    }

    #[test]
    fn a_completed_run_completes_with_its_output_and_fuel_whatever_interrupted_it() {
        for stop in [
            None,
            Some(StopReason::Shutdown),
            Some(StopReason::Cancelled),
        ] {
            let done = Outcome::Completed {
                output: b"ok".to_vec(),
            };
            assert_eq!(
                transition(done, Ok(Vec::new()), Some(42), stop, backoff()),
                Some(Transition::Complete(
                    Completion {
                        output: b"ok".to_vec(),
                        fuel_used: Some(42),
                        follow_ups: Vec::new(),
                        log: None,
                    },
                    backoff()
                ))
            );
        }
    }

    #[test]
    fn an_interrupted_run_is_released_on_shutdown_cancelled_on_cancel_and_dropped_on_a_lost_lease()
    {
        assert_eq!(
            transition(
                cancelled(),
                Ok(Vec::new()),
                None,
                Some(StopReason::Shutdown),
                backoff()
            ),
            Some(Transition::Release("host shutting down"))
        );
        assert_eq!(
            transition(
                cancelled(),
                Ok(Vec::new()),
                None,
                Some(StopReason::Cancelled),
                backoff()
            ),
            Some(Transition::Cancel("cancelled".into(), None))
        );
        assert_eq!(
            transition(
                cancelled(),
                Ok(Vec::new()),
                None,
                Some(StopReason::LeaseLost),
                backoff()
            ),
            None
        );
        // Interrupted with no reason recorded: only a cancel interrupts that way.
        assert_eq!(
            transition(cancelled(), Ok(Vec::new()), None, None, backoff()),
            Some(Transition::Cancel("cancelled".into(), None))
        );
    }

    #[test]
    fn a_failed_run_fails_with_its_reason_fatality_backoff_and_fuel() {
        let trap = Outcome::Failed(SandboxFailure::Trap("unreachable".into()));
        let Some(Transition::Fail(failure)) =
            transition(trap, Ok(Vec::new()), Some(7), None, backoff())
        else {
            panic!("a trap is a failure");
        };
        assert!(failure.error.contains("unreachable"), "{}", failure.error);
        assert_eq!((failure.backoff, failure.fuel_used), (backoff(), Some(7)));

        assert!(!failure.fatal, "a trap may be retried");

        let guest = Outcome::Failed(SandboxFailure::GuestFatal("bad input".into()));
        let Some(Transition::Fail(failure)) =
            transition(guest, Ok(Vec::new()), None, None, backoff())
        else {
            panic!("a guest error is a failure");
        };
        assert!(failure.fatal, "a guest's fatal error is fatal");
    }

    #[test]
    fn a_type_that_is_gone_is_fatal_and_an_unreadable_registry_releases_the_job() {
        let gone = ResolveError::Permanent("job type removed".into());
        assert_eq!(
            unrunnable(&gone),
            Transition::Fail(Failure::fatal("job type removed"))
        );
        let down = ResolveError::Infrastructure(anyhow::anyhow!("database unreachable"));
        assert_eq!(
            unrunnable(&down),
            Transition::Release("infrastructure: job type unavailable")
        );
    }

    #[test]
    fn secrets_this_host_cannot_open_release_and_a_corrupt_one_fails_retryably() {
        let keyless = ResolveError::NotHere("granted secrets, no key here".into());
        assert_eq!(
            unrunnable(&keyless),
            Transition::Release("not runnable on this host")
        );
        let corrupt = ResolveError::Secret("secret K cannot be opened".into());
        assert_eq!(
            unrunnable(&corrupt),
            Transition::Fail(Failure::retry("secret K cannot be opened"))
        );
    }
}
