//! What every attempt shares, whatever runs it (a component in the sandbox, `executor`,
//! or a webhook delivery, `webhook_attempt`): the context each attempt task gets, the
//! handle that interrupts it and why, the guard that frees its slot when its run ends,
//! and the hand-over of its transition to the completer.
//!
//! Must not: run anything or decide a transition (the two runners do); import either
//! runner (`slots` chooses between them).

use std::sync::{Arc, Mutex};

use sluice_store::Lease;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{Span, info, info_span, warn};

use super::completer::{Completer, Recorded, Transition};
use super::registry::Registry;
use super::usage_meter::UsageMeter;
use sluice_shared::metrics::Metrics;

/// Why a running attempt is being interrupted. The first reason set wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// An operator cancelled the job: it ends `cancelled`.
    Cancelled,
    /// The host is shutting down: the job is released without using up the attempt.
    Shutdown,
    /// The lease was lost (another worker may hold the job): record nothing.
    LeaseLost,
}

/// The handle the worker loop keeps for each running attempt.
#[derive(Clone, Default)]
pub struct Interrupt {
    token: CancellationToken,
    reason: Arc<Mutex<Option<StopReason>>>,
}

impl Interrupt {
    /// Ask the attempt to stop; the sandbox interrupts the guest within one epoch tick.
    pub fn stop(&self, reason: StopReason) {
        self.reason
            .lock()
            .expect("interrupt lock")
            .get_or_insert(reason);
        self.token.cancel();
    }

    pub(super) fn reason(&self) -> Option<StopReason> {
        *self.reason.lock().expect("interrupt lock")
    }

    /// Resolves once the attempt is asked to stop.
    pub(super) async fn stopped(&self) {
        self.token.cancelled().await
    }

    /// The token the sandbox watches to interrupt the guest.
    pub(super) fn token(&self) -> CancellationToken {
        self.token.clone()
    }
}

/// What every attempt task needs; cloned into each.
#[derive(Clone)]
pub(super) struct AttemptContext {
    pub(super) completer: Completer,
    pub(super) registry: Arc<Registry>,
    pub(super) metrics: Metrics,
    pub(super) usage: UsageMeter,
    pub(super) tracer: sluice_trace::Tracer,
}

/// Dropped when an attempt's run ends (or the attempt ends before reaching it): tells
/// the worker loop the job's slot is free while its outcome is still being written.
pub(super) struct Executing {
    ran: mpsc::UnboundedSender<i64>,
    job_id: i64,
}

impl Executing {
    pub(super) fn new(ran: mpsc::UnboundedSender<i64>, job_id: i64) -> Executing {
        Executing { ran, job_id }
    }
}

impl Drop for Executing {
    fn drop(&mut self) {
        // The loop may be gone (shutdown budget spent); nothing left to tell then.
        let _ = self.ran.send(self.job_id);
    }
}

/// The span an attempt logs in. Made only where something is logged: the fmt layer
/// formats a span's fields when it is created, which cost a few per cent of the
/// worker's CPU when made for every job.
pub(super) fn span(id: i64, tenant: &str, job_type: &str, attempt: i32) -> Span {
    info_span!("job", id, tenant = %tenant, r#type = %job_type, attempt)
}

/// Hands `next` to the completer; `None` (the lease was lost) records nothing.
pub(super) async fn record(
    completer: &Completer,
    lease: Lease,
    next: Option<Transition>,
) -> Recorded {
    match next {
        None => {
            warn!("lease lost while running; outcome dropped");
            None
        }
        Some(next) => {
            if let Transition::Fail(failure) = &next {
                info!(error = %failure.error, fatal = failure.fatal, "attempt failed");
            }
            completer.record(lease, next).await
        }
    }
}

/// Gives back a job that was claimed (prefetched) but never started, for `reason` (it
/// goes to the attempt history). The attempt is not used up.
pub(super) async fn release_unstarted(
    ctx: AttemptContext,
    lease: Lease,
    reason: &'static str,
) -> Recorded {
    ctx.completer
        .record(lease, Transition::Release(reason))
        .await
}
