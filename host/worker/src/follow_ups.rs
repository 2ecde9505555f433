//! Follow-up jobs on the worker's side: the grant each attempt of a 0.2 component gets
//! (the tenant's caps, or the defaults), the check made when the guest calls
//! `jobs.enqueue` (the options and payload as any enqueue checks them, and that the
//! tenant has the job type, through a [`JobTypeLookup`]: the registry's cache), and the
//! conversion of what the guest asked for into the store's [`NewJob`], which the
//! completion inserts.
//!
//! A follow-up of the reserved type `sluice.event` is an event, checked here as one
//! (docs/webhooks.md). Must not: insert jobs (the completion does, in the store, atomically with the
//! attempt's success) or let a follow-up name another tenant (the tenant is always the
//! attempt's own, never the guest's to choose).

use std::sync::{Arc, Weak};

use chrono::DateTime;
use sluice_sandbox::{
    CheckFuture, FollowUp, FollowUpCheck, FollowUpGrant, FollowUpRefusal, ReserveFuture,
};
use sluice_store::{
    EVENT_JOB_TYPE, EventRequest, KeyScope, NewJob, RunAt, TenantRecord, TraceHeaders, priority,
};

/// Follow-up jobs one attempt may enqueue when its tenant sets no cap.
pub const DEFAULT_MAX_FOLLOW_UPS: u32 = 1000;

/// Their payload bytes together when its tenant sets no cap (16 MiB).
pub const DEFAULT_MAX_FOLLOW_UP_BYTES: u64 = 16 << 20;

/// Whether a tenant has a job type: a follow-up of a type its tenant lacks is refused when
/// the guest asks. The registry answers from its cache; it holds the grants made here,
/// so they hold it weakly.
pub(super) trait JobTypeLookup: Send + Sync {
    /// `Ok` when `tenant` has `job_type`; the refusal to give the guest otherwise.
    fn has_job_type<'a>(self: Arc<Self>, tenant: &'a str, job_type: &'a str) -> CheckFuture<'a>;

    /// A fresh job id for a follow-up of contract 0.3 (the store's sequence).
    fn reserve_id(self: Arc<Self>) -> ReserveFuture<'static>;
}

/// The grant for the attempts of `tenant`'s jobs (the registry caches it with the
/// tenant's record). `default_payload` is the host's payload limit for tenants without
/// `max_payload_bytes`.
pub(super) fn grant(
    job_types: Weak<dyn JobTypeLookup>,
    tenant: &TenantRecord,
    default_payload: i64,
) -> Arc<FollowUpGrant> {
    let limits = &tenant.limits;
    Arc::new(FollowUpGrant {
        max_count: limits
            .max_follow_ups
            .map_or(DEFAULT_MAX_FOLLOW_UPS, |n| n.max(0) as u32),
        max_bytes: limits
            .max_follow_up_bytes
            .map_or(DEFAULT_MAX_FOLLOW_UP_BYTES, |n| n.max(0) as u64),
        check: Arc::new(TenantJobTypes {
            job_types,
            tenant: tenant.id.clone(),
            max_payload: limits.max_payload_bytes.map_or(default_payload, i64::from),
        }),
    })
}

/// The job the guest asked for, as the store takes it: the attempt's tenant, and the
/// same defaults as any enqueue (medium priority, due now, the type's attempts).
pub(super) fn to_new_job(tenant: &str, mut follow_up: FollowUp) -> Result<NewJob, String> {
    let payload = std::mem::take(&mut follow_up.payload);
    new_job(tenant, &follow_up, payload)
}

/// [`to_new_job`] with the payload given apart, so a check need not copy it.
fn new_job(tenant: &str, follow_up: &FollowUp, payload: Vec<u8>) -> Result<NewJob, String> {
    let run_at = match (follow_up.delay, follow_up.run_at_ms) {
        (Some(delay), _) => RunAt::Delay(delay),
        (None, Some(ms)) => RunAt::At(DateTime::from_timestamp_millis(ms).ok_or_else(|| {
            format!("invalid run-at-ms: {ms} ms since the Unix epoch is not an instant")
        })?),
        (None, None) => RunAt::Now,
    };
    let max_attempts = follow_up
        .max_attempts
        .map(|n| i32::try_from(n).map_err(|_| format!("invalid max-attempts: {n} is too large")))
        .transpose()?;
    let mut job = NewJob::new(tenant, follow_up.job_type.clone(), payload)
        .with_priority(follow_up.priority.map_or(priority::MEDIUM, i32::from))
        .with_run_at(run_at);
    job.max_attempts = max_attempts;
    if let Some(key) = &follow_up.idempotency_key {
        job = job.with_idempotency_key(key.clone(), KeyScope::Retained);
    }
    job.concurrency_key = follow_up.concurrency_key.clone();
    job.trace = follow_up.trace.as_ref().map(|context| TraceHeaders {
        traceparent: context.traceparent(),
        tracestate: context.state.clone(),
    });
    // An event's id is 0: it names no job.
    job.id = follow_up
        .id
        .filter(|&id| id != 0)
        .map(|id| i64::try_from(id).unwrap_or(i64::MAX));
    job.validate().map_err(|e| e.to_string())?;
    Ok(job)
}

/// A `sluice.event` follow-up is an event sent when the attempt's completion is written:
/// its payload must be an event request, and job options (when, priority, attempts, a
/// job idempotency key) do not apply to it.
fn check_event(follow_up: &FollowUp) -> Result<(), FollowUpRefusal> {
    let options = [
        (follow_up.delay.is_some(), "delay"),
        (follow_up.run_at_ms.is_some(), "run-at-ms"),
        (follow_up.priority.is_some(), "priority"),
        (follow_up.max_attempts.is_some(), "max-attempts"),
        (
            follow_up.idempotency_key.is_some(),
            "idempotency-key (put it in the payload)",
        ),
    ];
    if let Some((_, name)) = options.iter().find(|(set, _)| *set) {
        return Err(FollowUpRefusal::Invalid(format!(
            "a `{EVENT_JOB_TYPE}` follow-up is sent when the attempt completes: option {name} does not apply"
        )));
    }
    EventRequest::parse(&follow_up.payload)
        .map(|_| ())
        .map_err(|e| FollowUpRefusal::Invalid(e.to_string()))
}

/// The check of one attempt's follow-ups: they belong to `tenant`.
struct TenantJobTypes {
    /// Weak: the registry's cache holds this grant.
    job_types: Weak<dyn JobTypeLookup>,
    tenant: String,
    max_payload: i64,
}

impl FollowUpCheck for TenantJobTypes {
    fn check<'a>(&'a self, follow_up: &'a FollowUp) -> CheckFuture<'a> {
        Box::pin(async move {
            let size = follow_up.payload.len() as i64;
            if size > self.max_payload {
                return Err(FollowUpRefusal::Invalid(format!(
                    "payload is {size} bytes, over the tenant's limit of {} bytes",
                    self.max_payload
                )));
            }
            // The options as any enqueue checks them (the payload is not looked at).
            new_job(&self.tenant, follow_up, Vec::new()).map_err(FollowUpRefusal::Invalid)?;
            if follow_up.job_type == EVENT_JOB_TYPE {
                return check_event(follow_up);
            }
            let Some(job_types) = self.job_types.upgrade() else {
                return Err(FollowUpRefusal::Unavailable(
                    "the worker is shutting down".to_owned(),
                ));
            };
            job_types
                .has_job_type(&self.tenant, &follow_up.job_type)
                .await
        })
    }

    fn reserve_id(&self) -> ReserveFuture<'_> {
        match self.job_types.upgrade() {
            Some(job_types) => job_types.reserve_id(),
            None => Box::pin(async {
                Err(FollowUpRefusal::Unavailable(
                    "the worker is shutting down".to_owned(),
                ))
            }),
        }
    }
}
