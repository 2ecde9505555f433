//! An attempt of a webhook delivery (a job of the reserved type `sluice.webhook`): run by
//! the host itself, with no component, through [`sluice_shared::webhooks::deliver`], and its
//! verdict mapped to a queue transition ([`transition`], pure) for the completer.
//!
//! The delivery is a job like any other: lease, fencing, cancellation, shutdown and the
//! attempt history are the worker's. Its retries follow the endpoint's schedule: the
//! failure carries a backoff whose step for this attempt is exactly the scheduled delay
//! (± 10 % jitter). Must not: write to the store (the completer does; the one exception
//! is the 410 Gone rule inside `deliver`) or decide attempt counting.

use std::time::Duration;

use sluice_store::{AttemptOutcome, Backoff, ClaimedJob, Completion, Failure, Lease};
use tracing::Instrument;

use super::attempt::{AttemptContext, Executing, Interrupt, StopReason, record, span as job_span};
use super::attempt_trace::AttemptSpan;
use super::completer::{Recorded, Transition};
use super::registry::ResolveError;
use sluice_shared::webhooks::deliver::{DeliveryJob, Sender, Verdict, deliver};

/// Jitter around each scheduled retry delay.
const RETRY_JITTER: f64 = 0.1;

/// Runs one delivery attempt (a claimed job of type `sluice.webhook`) and records it.
pub(super) async fn run(
    ctx: AttemptContext,
    job: ClaimedJob,
    interrupt: Interrupt,
    executing: Executing,
) -> Recorded {
    let _in_progress = ctx.metrics.attempt_started();
    let traced = AttemptSpan::start(&ctx.tracer, &job, "deliver");
    let ClaimedJob {
        id,
        tenant,
        job_type,
        payload,
        attempt,
        lease,
        ..
    } = job;
    let delivery = DeliveryJob {
        id,
        tenant: &tenant,
        attempt,
        payload: &payload,
        trace: traced
            .context()
            .map(|context| (context.traceparent(), context.state.clone())),
    };
    let traced_error = traced.is_recording();
    let (recorded, error) =
        deliver_and_record(&ctx, &delivery, lease, &interrupt, executing, traced_error)
            .instrument(job_span(id, &tenant, &job_type, attempt))
            .await;
    ctx.metrics
        .attempt_recorded(&tenant, &job_type, attempt, recorded);
    traced.end(
        recorded.map_or("lost", AttemptOutcome::as_str),
        None,
        error.as_deref(),
    );
    recorded
}

/// Sends the delivery and records its outcome; the error's text comes back only when
/// `want_error` (the attempt's span records it).
async fn deliver_and_record(
    ctx: &AttemptContext,
    delivery: &DeliveryJob<'_>,
    lease: Lease,
    interrupt: &Interrupt,
    executing: Executing,
    want_error: bool,
) -> (Recorded, Option<String>) {
    let registry = &ctx.registry;
    let sending = async {
        let grant = match registry.webhook_grant(delivery.tenant).await {
            Ok(grant) => grant,
            Err(ResolveError::Permanent(why)) => return Verdict::Dead(why),
            Err(_) => return Verdict::Release("infrastructure: tenant unreadable"),
        };
        let sender = Sender {
            store: registry.store(),
            connector: registry.sandbox().connector(),
            keyring: registry.keyring(),
            metrics: &ctx.metrics,
        };
        deliver(&sender, delivery, &grant).await
    };
    let verdict = tokio::select! {
        verdict = sending => Some(verdict),
        () = interrupt.stopped() => None,
    };
    drop(executing);
    let error = match &verdict {
        Some(Verdict::Retry { error, .. } | Verdict::Dead(error)) if want_error => {
            Some(error.clone())
        }
        _ => None,
    };
    let next = match verdict {
        Some(verdict) => Some(transition(verdict, delivery.attempt)),
        None => match interrupt.reason() {
            Some(StopReason::Shutdown) => Some(Transition::Release("host shutting down")),
            Some(StopReason::LeaseLost) => None,
            Some(StopReason::Cancelled) | None => {
                Some(Transition::Cancel("cancelled".into(), None))
            }
        },
    };
    (record(&ctx.completer, lease, next).await, error)
}

/// The transition for a verdict of attempt `attempt`. Pure.
pub(super) fn transition(verdict: Verdict, attempt: i32) -> Transition {
    match verdict {
        Verdict::Delivered { status, response } => {
            let output = serde_json::json!({ "status": status, "response": response });
            Transition::Complete(
                Completion {
                    output: output.to_string().into_bytes(),
                    fuel_used: None,
                    follow_ups: Vec::new(),
                    log: None,
                },
                Backoff::default(),
            )
        }
        Verdict::Retry { error, delay } => Transition::Fail(Failure {
            error,
            fatal: false,
            backoff: scheduled(delay, attempt),
            fuel_used: None,
            log: None,
        }),
        Verdict::Dead(error) => Transition::Fail(Failure::fatal(error)),
        Verdict::Cancel(reason) => Transition::Cancel(reason.into(), None),
        Verdict::Release(reason) => Transition::Release(reason),
    }
}

/// A backoff whose step after attempt `attempt` is `delay`: the store computes
/// `min(cap, base · 2^(attempt-1))`, so base = delay / 2^(attempt-1) and cap = delay.
fn scheduled(delay: Duration, attempt: i32) -> Backoff {
    let doublings = (attempt.max(1) - 1).min(62);
    Backoff {
        base: delay.div_f64(2f64.powi(doublings)),
        cap: delay,
        jitter: RETRY_JITTER,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the store's fail statement computes from a backoff (without jitter).
    fn step(b: Backoff, attempt: i32) -> Duration {
        b.base.mul_f64(2f64.powi(attempt - 1)).min(b.cap)
    }

    #[test]
    fn a_retry_waits_exactly_the_scheduled_delay_for_its_attempt() {
        for (delay, attempt) in [
            (Duration::from_secs(5), 1),
            (Duration::from_secs(300), 2),
            (Duration::from_secs(36_000), 7),
            (Duration::from_millis(100), 20),
        ] {
            let b = scheduled(delay, attempt);
            let got = step(b, attempt);
            let diff = got.abs_diff(delay);
            assert!(
                diff < Duration::from_micros(1),
                "{delay:?} #{attempt}: {got:?}"
            );
            assert_eq!(b.jitter, RETRY_JITTER);
        }
    }

    #[test]
    fn verdicts_map_to_complete_fail_dead_cancel_and_release() {
        let Transition::Complete(done, _) = transition(
            Verdict::Delivered {
                status: 204,
                response: "ok".into(),
            },
            1,
        ) else {
            panic!("2xx completes")
        };
        let output: serde_json::Value = serde_json::from_slice(&done.output).unwrap();
        assert_eq!(output, serde_json::json!({"status": 204, "response": "ok"}));
        let Transition::Fail(retry) = transition(
            Verdict::Retry {
                error: "HTTP 500: boom".into(),
                delay: Duration::from_secs(5),
            },
            1,
        ) else {
            panic!("a retry fails the attempt")
        };
        assert!(!retry.fatal);
        let Transition::Fail(dead) =
            transition(Verdict::Dead("HTTP 302: redirect refused".into()), 1)
        else {
            panic!("dead fails fatally")
        };
        assert!(dead.fatal);
        assert_eq!(
            transition(Verdict::Cancel("endpoint ep_1 was deleted".into()), 1),
            Transition::Cancel("endpoint ep_1 was deleted".into(), None)
        );
        assert_eq!(
            transition(Verdict::Release("no key"), 1),
            Transition::Release("no key")
        );
    }
}
