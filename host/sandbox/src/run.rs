//! One attempt, start to finish: a fresh store, instantiate from the cached pre, call
//! `run`, and map whatever happened to an [`Outcome`]. Runs on the guest runtime.
//!
//! Outcomes are decided from typed values only — the guest's `result`, wasmtime's `Trap`
//! code, `I32Exit`, and the flags the limiter and epoch callback set — never from error
//! text. Nothing a guest does may panic the host. Secret values the guest read are
//! masked in the report (output, messages, logs) before it leaves the sandbox. Must not
//! reuse a store across attempts.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use wasmtime::{PoolConcurrencyLimitError, Store, Trap, WasmBacktrace};

use crate::attempt_trace::AttemptTrace;
use crate::capabilities::durable::SleepPastDeadline;
use crate::capabilities::http::HttpCalls;
use crate::capabilities::jobs::FollowUpUnavailable;
use crate::component::TaskComponent;
use crate::config::Limits;
use crate::engine::COMPONENT_CAPS;
use crate::guest_result::{JobArg, Output, PassingJobIn, RunResult};
use crate::host_imports::Job;
use crate::journal::JournalFailure;
use crate::mask::Mask;
use crate::outcome::{Failure, Outcome, RunReport};
use crate::store::{HostState, Interrupt, Reach, new_store};

/// The job as the guest sees it (the `job` record of the task world).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobInput {
    /// The job's id (stable across attempts).
    pub id: u64,
    /// The job type the component is registered for.
    pub job_type: String,
    /// The tenant that owns the job.
    pub tenant: String,
    /// This attempt's number, starting at 1.
    pub attempt: u32,
    /// The attempt after which a retryable failure becomes `dead`.
    pub max_attempts: u32,
    /// Payload bytes (JSON by convention).
    pub payload: Vec<u8>,
    /// The trace the attempt continues (`None`: no spans, nothing injected).
    pub trace: Option<AttemptTrace>,
}

/// How the guarded part of an attempt ended.
enum Ended {
    /// `run` returned (or wasmtime raised an error while calling it).
    Called(wasmtime::Result<RunResult>),
    /// The instance has no `run` of the task world's type (checked when the component was
    /// prepared, so a host bug).
    NoRun(wasmtime::Error),
    /// Instantiation failed.
    NotInstantiated(wasmtime::Error),
    /// The deadline (plus slack) passed while the guest was blocked in a host call.
    HostTimeout,
    /// Cancelled while the guest was blocked in a host call.
    HostCancelled,
}

/// Runs one attempt. `tick` is the epoch tick, used for the outer timeout's slack.
pub(crate) async fn run_attempt(
    component: TaskComponent,
    job: JobInput,
    limits: Limits,
    reach: Reach,
    cancel: CancellationToken,
    tick: Duration,
) -> RunReport {
    let start = Instant::now();
    let timeout = limits.effective_timeout();
    let deadline = timeout.map(|t| start + t);
    let engine = component.pre().engine().clone();
    let mut store = match new_store(
        &engine,
        &limits,
        COMPONENT_CAPS,
        cancel.clone(),
        deadline,
        reach,
        job.trace,
    ) {
        Ok(store) => store,
        Err(e) => return internal(format!("set up the store: {e:#}"), start),
    };

    let mut instantiate_time = Duration::ZERO;
    let mut guest_time = Duration::ZERO;
    let job = Job {
        id: job.id,
        job_type: job.job_type,
        tenant: job.tenant,
        attempt: job.attempt,
        max_attempts: job.max_attempts,
        payload: job.payload,
    };
    let guest = async {
        let began = Instant::now();
        let instance = component
            .pre()
            .instance_pre()
            .instantiate_async(&mut store)
            .await;
        instantiate_time = began.elapsed();
        let ended = match instance {
            Ok(instance) => {
                match instance.get_typed_func::<(JobArg<'_>,), (RunResult,)>(&mut store, "run") {
                    Ok(run) => Ended::Called(
                        run.call_async(&mut store, (JobArg(&job),))
                            .await
                            .map(|(result,)| result),
                    ),
                    Err(e) => Ended::NoRun(e),
                }
            }
            Err(e) => Ended::NotInstantiated(e),
        };
        guest_time = began.elapsed();
        ended
    };
    // Epochs and fuel only stop a guest that is executing wasm; these stop one that is
    // blocked in a host call (e.g. waiting on a WASI pollable).
    let outer_deadline = async {
        match deadline {
            Some(d) => tokio::time::sleep_until((d + slack(tick)).into()).await,
            None => std::future::pending().await,
        }
    };
    let ended = tokio::select! {
        biased;
        ended = guest => ended,
        () = cancel.cancelled() => Ended::HostCancelled,
        () = outer_deadline => Ended::HostTimeout,
    };

    let mut outcome = classify(ended, store.data(), &limits);
    // A durable job's completion or suspension: what it journaled since the last flush
    // is made durable first (the worker's statement comes after; a crash between the two
    // replays it). A completion must also have replayed the whole journal.
    if let Some(journal) = store.data().caps.durable.journal.clone() {
        let made_durable = match &outcome {
            Outcome::Completed { .. } => match journal.check_consumed() {
                Ok(()) => journal.flush(None).await,
                Err(diverged) => Err(diverged),
            },
            Outcome::Suspended(_) => journal.flush(None).await,
            Outcome::Failed(_) => Ok(()),
        };
        if let Err(failure) = made_durable {
            outcome = Outcome::Failed(journal_failure(&failure));
        }
    }
    let elapsed = start.elapsed();
    report(
        store,
        &limits,
        outcome,
        elapsed,
        (instantiate_time, guest_time),
    )
}

/// Grace beyond the deadline before the outer timer fires, so a guest executing wasm is
/// stopped by its epoch callback (cheaper, precise) and the timer only catches host calls.
fn slack(tick: Duration) -> Duration {
    tick * 2 + Duration::from_millis(20)
}

fn classify(ended: Ended, state: &HostState, limits: &Limits) -> Outcome {
    // A durable job's journal failing wins: whatever the guest did after a divergence
    // (answered live) or a refused append is a consequence.
    if let Some(failure) = state
        .caps
        .durable
        .journal
        .as_ref()
        .and_then(|j| j.failure())
    {
        return Outcome::Failed(journal_failure(&failure));
    }
    // A capability suspended the run (and ended the guest to do it).
    if let Some(suspension) = state.run.suspension() {
        return Outcome::Suspended(suspension);
    }
    // The epoch callback's verdict wins: whatever error the guest reported after being
    // interrupted is a consequence.
    match state.interrupted {
        Some(Interrupt::Cancelled) => return Outcome::Failed(Failure::Cancelled),
        Some(Interrupt::Timeout) => return Outcome::Failed(timeout(limits)),
        Some(Interrupt::Journal) | None => {}
    }
    let failure = match ended {
        Ended::Called(Ok(RunResult::Ok(Output::Copied(output))))
            if output.len() as u64 <= limits.output_bytes =>
        {
            return Outcome::Completed { output };
        }
        Ended::Called(Ok(RunResult::Ok(_))) => Failure::OutputTooLarge(limits.output_bytes),
        // The tag decides: a message that is huge, not UTF-8 or unreadable is shown as
        // such, and never turns a `fatal` into a retryable failure.
        Ended::Called(Ok(RunResult::Err { fatal, message })) => {
            let message = message.to_string();
            if fatal {
                Failure::GuestFatal(message)
            } else {
                Failure::GuestRetry(message)
            }
        }
        Ended::Called(Ok(RunResult::Invalid(invalid))) => {
            Failure::Trap(format!("invalid result from guest: {invalid}"))
        }
        Ended::Called(Err(e)) => classify_error(&e, state, limits, false),
        Ended::NoRun(e) => Failure::Internal(format!("find `run`: {e:#}")),
        Ended::NotInstantiated(e) => classify_error(&e, state, limits, true),
        Ended::HostCancelled => Failure::Cancelled,
        Ended::HostTimeout => timeout(limits),
    };
    Outcome::Failed(failure)
}

fn classify_error(
    e: &wasmtime::Error,
    state: &HostState,
    limits: &Limits,
    instantiating: bool,
) -> Failure {
    let trap = e.downcast_ref::<Trap>().copied();
    if trap == Some(Trap::OutOfFuel) {
        return Failure::FuelExhausted(limits.fuel);
    }
    // A refused growth surfaces as whatever the guest's allocator does next (usually an
    // abort → `unreachable`); the limiter's flag names the real cause.
    if state.limiter.memory_limit_hit() {
        return Failure::MemoryLimit(limits.memory_bytes);
    }
    if state.limiter.table_limit_hit() {
        return Failure::TableLimit(limits.table_elements);
    }
    if let Some(trap) = trap {
        return Failure::Trap(trap_kind(trap));
    }
    if let Some(exit) = e.downcast_ref::<wasmtime_wasi::I32Exit>() {
        return Failure::Trap(format!("guest called exit({})", exit.0));
    }
    if let Some(sleep) = e.downcast_ref::<SleepPastDeadline>() {
        return Failure::SleepTooLong(sleep.to_string());
    }
    if let Some(unavailable) = e.downcast_ref::<FollowUpUnavailable>() {
        // The host could not check a follow-up job: its trouble, not the guest's.
        return Failure::Internal(unavailable.to_string());
    }
    if instantiating {
        if e.downcast_ref::<PoolConcurrencyLimitError>().is_some() {
            // The host ran out of pool slots (it should not: `run` holds one per attempt).
            return Failure::Internal(format!("instantiate: {e:#}"));
        }
        // The component cannot be instantiated within the sandbox's per-component limits
        // (too many instances, oversized tables, ...): its fault, and retrying won't help.
        return Failure::Trap(format!("instantiation failed: {e:#}"));
    }
    if e.downcast_ref::<PassingJobIn>().is_some() {
        // The guest's `cabi_realloc` returned a pointer wasmtime refused.
        return Failure::Trap(format!(
            "invalid allocation from guest while passing the job in: {}",
            e.root_cause()
        ));
    }
    if e.downcast_ref::<WasmBacktrace>().is_none() {
        // Raised outside the guest's code, at the call boundary, and not while passing the
        // job in: wasmtime refused the return pointer `run` handed back (misaligned, or its
        // 16 bytes outside memory) before `guest_result.rs` could read what it points to.
        return Failure::Trap(format!("invalid result from guest: {}", e.root_cause()));
    }
    // A host function refused the guest's input (e.g. more than the host-call cap in one
    // call, a bad handle); the guest's own fault, reported with wasmtime's explanation.
    Failure::Trap(format!("host call failed: {}", e.root_cause()))
}

fn journal_failure(failure: &JournalFailure) -> Failure {
    Failure::Journal {
        reason: failure.to_string(),
        fatal: failure.is_fatal(),
    }
}

fn timeout(limits: &Limits) -> Failure {
    Failure::Timeout(limits.effective_timeout().unwrap_or_default())
}

fn trap_kind(trap: Trap) -> String {
    match trap {
        Trap::StackOverflow => "stack overflow".into(),
        Trap::UnreachableCodeReached => "unreachable (panic)".into(),
        Trap::MemoryOutOfBounds => "out of bounds memory access".into(),
        Trap::HeapMisaligned => "misaligned memory access".into(),
        Trap::TableOutOfBounds => "out of bounds table access".into(),
        Trap::IndirectCallToNull => "call to null function".into(),
        Trap::BadSignature => "indirect call type mismatch".into(),
        Trap::IntegerOverflow => "integer overflow".into(),
        Trap::IntegerDivisionByZero => "integer divide by zero".into(),
        Trap::BadConversionToInteger => "invalid conversion to integer".into(),
        Trap::Interrupt => "interrupted".into(),
        Trap::AllocationTooLarge => "allocation too large".into(),
        Trap::CannotEnterComponent => "cannot enter component instance".into(),
        // `Trap` is non-exhaustive; its Display reads "wasm trap: <what>".
        other => {
            let text = other.to_string();
            text.strip_prefix("wasm trap: ").unwrap_or(&text).to_owned()
        }
    }
}

fn report(
    mut store: Store<HostState>,
    limits: &Limits,
    outcome: Outcome,
    elapsed: Duration,
    (instantiate_time, guest_time): (Duration, Duration),
) -> RunReport {
    let remaining = store.get_fuel().unwrap_or(0);
    let fuel_used = limits.store_fuel().saturating_sub(remaining);
    let state = store.data_mut();
    let logs = state.logs.snapshot();
    // Follow-up jobs exist only if the attempt completes or a durable run suspends: any
    // other ending drops them.
    let durable = state.caps.durable.journal.is_some();
    let mut follow_ups = match outcome {
        Outcome::Completed { .. } => state.caps.jobs.take(),
        Outcome::Suspended(_) if durable => state.caps.jobs.take(),
        Outcome::Suspended(_) | Outcome::Failed(_) => Vec::new(),
    };
    // Every secret value the guest read is hidden in what the host keeps of the attempt,
    // the rows of its follow-up jobs included (a child reads the secret itself).
    let revealed = state.caps.secrets.revealed().iter();
    let mask = Mask::new(revealed.map(|(n, v)| (n.as_str(), v.as_str())));
    if !mask.is_empty() {
        for job in &mut follow_ups {
            job.payload = mask.bytes(&job.payload);
            job.idempotency_key = job.idempotency_key.as_deref().map(|k| mask.text(k));
        }
    }
    let (outcome, log_bytes) = if mask.is_empty() {
        (outcome, logs.bytes)
    } else if logs.dropped > 0 {
        (masked(outcome, &mask), mask.truncated_log(&logs.bytes))
    } else {
        (masked(outcome, &mask), mask.bytes(&logs.bytes))
    };
    RunReport {
        outcome,
        fuel_used,
        logs_truncated: logs.dropped > 0,
        logs_dropped_bytes: logs.dropped,
        logs: log_bytes,
        elapsed,
        instantiate_time,
        guest_time,
        peak_memory_bytes: state.limiter.memory_bytes(),
        http: state.caps.http.calls(),
        follow_ups,
        journal: state.caps.durable.journal.as_ref().map(|j| j.counts()),
    }
}

/// `outcome` with revealed secret values replaced in its output and messages.
fn masked(outcome: Outcome, mask: &Mask) -> Outcome {
    match outcome {
        Outcome::Completed { output } => Outcome::Completed {
            output: mask.bytes(&output),
        },
        Outcome::Failed(failure) => Outcome::Failed(match failure {
            Failure::GuestRetry(m) => Failure::GuestRetry(mask.text(&m)),
            Failure::GuestFatal(m) => Failure::GuestFatal(mask.text(&m)),
            Failure::Trap(m) => Failure::Trap(mask.text(&m)),
            Failure::Internal(m) => Failure::Internal(mask.text(&m)),
            other => other,
        }),
        suspended @ Outcome::Suspended(_) => suspended,
    }
}

/// A report for an attempt the host could not run.
pub(crate) fn internal(msg: String, start: Instant) -> RunReport {
    failed_before_start(Failure::Internal(msg), start.elapsed())
}

/// A report for an attempt that never reached the guest.
pub(crate) fn failed_before_start(failure: Failure, elapsed: Duration) -> RunReport {
    RunReport {
        outcome: Outcome::Failed(failure),
        fuel_used: 0,
        logs: Vec::new(),
        logs_truncated: false,
        logs_dropped_bytes: 0,
        elapsed,
        instantiate_time: Duration::ZERO,
        guest_time: Duration::ZERO,
        peak_memory_bytes: 0,
        http: HttpCalls::default(),
        follow_ups: Vec::new(),
        journal: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trap_kinds_are_named() {
        assert_eq!(trap_kind(Trap::StackOverflow), "stack overflow");
        assert_eq!(
            trap_kind(Trap::UnreachableCodeReached),
            "unreachable (panic)"
        );
        assert_eq!(
            trap_kind(Trap::AtomicWaitNonSharedMemory),
            "atomic wait on non-shared memory"
        );
    }
}
