//! Follow-up jobs (`sluice:task/jobs` of contracts 0.2 and 0.3): the host side of
//! `enqueue` (0.3's, which returns the job's id reserved by the host's check, is in
//! `v0_3.rs`).
//! Each call is checked (the attempt's caps on count and payload bytes here; the job
//! type, the options and the payload by the host's [`FollowUpCheck`]) and buffered in the
//! attempt's [`FollowUpBuffer`] (its state; the grant is [`FollowUpGrant`]); the buffer is handed back in [`crate::RunReport::follow_ups`], for
//! the host to insert with the attempt's completion, or to drop with any other ending.
//!
//! Must not: insert anything or talk to the database (the host's check may; the
//! sandbox only awaits it), keep a job the guest was told was refused, or trap on guest
//! input (a refusal is an `enqueue-error`; only the host's check being unable to answer
//! raises [`FollowUpUnavailable`], which ends the attempt as an internal failure).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use sluice_trace::{SpanKind, TraceContext};
use wasmtime::component::{HasSelf, Linker};

use super::shape::{Attempt, Capability, StoreData};
use crate::attempt_trace::AttemptTrace;
use crate::contract::Contract;
use crate::host_imports::v0_2::sluice::task::jobs::{
    self as v0_2, EnqueueError, EnqueueOptions, Host,
};
use crate::host_imports::v0_3::sluice::task::jobs as v0_3_jobs;
use crate::journal::codec::short_hash;
use crate::journal::{Journal, Step};
use crate::suspend::RunShared;

mod v0_3;

/// The reserved job type whose follow-ups are events, not jobs (id 0).
const EVENT_JOB_TYPE: &str = "sluice.event";

/// The capability (see [`Capability`]).
pub(crate) struct Jobs;

impl Capability for Jobs {
    type Grant = FollowUpGrant;
    type State = FollowUpBuffer;

    fn state(grant: Option<Arc<FollowUpGrant>>, attempt: &Attempt<'_>) -> FollowUpBuffer {
        let mut buffer = FollowUpBuffer::new(grant);
        buffer.journal = attempt.journal.cloned();
        buffer.run = attempt.run.clone();
        buffer.trace = attempt.trace.cloned();
        buffer
    }

    fn add_to_linker<T: StoreData>(
        linker: &mut Linker<T>,
        max: Contract,
        get: fn(&mut T) -> &mut FollowUpBuffer,
    ) -> wasmtime::Result<()> {
        if max >= Contract::V0_2 {
            v0_2::add_to_linker::<T, HasSelf<FollowUpBuffer>>(linker, get)?;
        }
        if max >= Contract::V0_3 {
            v0_3_jobs::add_to_linker::<T, HasSelf<FollowUpBuffer>>(linker, get)?;
        }
        Ok(())
    }
}

/// One follow-up job as the guest asked for it (options not given are `None`: the
/// host's defaults apply).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FollowUp {
    /// The name of a job type of the attempt's tenant.
    pub job_type: String,
    /// The child's payload bytes; counted against the grant's `max_bytes`.
    pub payload: Vec<u8>,
    /// The child's priority (higher runs first); `None`: the default.
    pub priority: Option<i16>,
    /// Due this long after the parent's completion is written; `None`: due then (or at
    /// `run_at_ms`).
    pub delay: Option<Duration>,
    /// Milliseconds since the Unix epoch (UTC).
    pub run_at_ms: Option<i64>,
    /// The child's attempt budget; `None`: its job type's.
    pub max_attempts: Option<u32>,
    /// Per tenant: a key another job holds makes no new job.
    pub idempotency_key: Option<String>,
    /// The type's per-key limits apply to jobs with the same key (contract 0.3).
    pub concurrency_key: Option<String>,
    /// The id the host reserved for it (contract 0.3's `enqueue` returns it; `None` for
    /// 0.2's and for events).
    pub id: Option<u64>,
    /// The context of the span its enqueue made: the child job's (or event's) trace
    /// continues from it (`None`: the attempt had no trace).
    pub trace: Option<TraceContext>,
}

/// Why the host's check refused a follow-up job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FollowUpRefusal {
    /// The tenant has no job type of this name.
    UnknownJobType(String),
    /// An option or the payload is invalid; the message names it.
    Invalid(String),
    /// The check could not be made (the database is unreachable).
    Unavailable(String),
}

/// The future a [`FollowUpCheck`] returns.
pub type CheckFuture<'a> = Pin<Box<dyn Future<Output = Result<(), FollowUpRefusal>> + Send + 'a>>;

/// The future of [`FollowUpCheck::reserve_id`].
pub type ReserveFuture<'a> =
    Pin<Box<dyn Future<Output = Result<u64, FollowUpRefusal>> + Send + 'a>>;

/// The host's check of one follow-up job, made when the guest asks for it (the job's
/// tenant is the attempt's; the host knows it).
pub trait FollowUpCheck: Send + Sync {
    /// `Ok` if the job may be enqueued; otherwise why not, passed to the guest.
    fn check<'a>(&'a self, follow_up: &'a FollowUp) -> CheckFuture<'a>;

    /// A job id no job has or will be given otherwise, for a checked follow-up of
    /// contract 0.3 (the job is inserted under it if the run completes or suspends).
    fn reserve_id(&self) -> ReserveFuture<'_>;
}

/// What an attempt may enqueue: its caps and the host's check.
#[derive(Clone)]
pub struct FollowUpGrant {
    /// Follow-up jobs one attempt may enqueue.
    pub max_count: u32,
    /// Their payload bytes together.
    pub max_bytes: u64,
    /// Asked about each follow-up when the guest makes it, so a refusal reaches the guest
    /// as an error.
    pub check: Arc<dyn FollowUpCheck>,
}

impl fmt::Debug for FollowUpGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FollowUpGrant")
            .field("max_count", &self.max_count)
            .field("max_bytes", &self.max_bytes)
            .finish_non_exhaustive()
    }
}

/// The error that ends an attempt whose follow-up could not be checked; mapped to an
/// internal (retried) failure by `run.rs`.
#[derive(Debug)]
pub(crate) struct FollowUpUnavailable(pub String);

impl fmt::Display for FollowUpUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot check a follow-up job: {}", self.0)
    }
}

impl std::error::Error for FollowUpUnavailable {}

/// The follow-up jobs one attempt has asked for so far: the capability's state.
#[derive(Default)]
pub(crate) struct FollowUpBuffer {
    grant: Option<Arc<FollowUpGrant>>,
    jobs: Vec<FollowUp>,
    bytes: u64,
    /// A durable job's journal: each `enqueue` is journaled with its answer.
    journal: Option<Journal>,
    /// The run: the ids 0.3's `enqueue` returned are noted there.
    run: RunShared,
    /// The trace the attempt continues: each accepted enqueue is a span (kind producer).
    trace: Option<AttemptTrace>,
}

impl FollowUpBuffer {
    pub(crate) fn new(grant: Option<Arc<FollowUpGrant>>) -> Self {
        FollowUpBuffer {
            grant,
            jobs: Vec::new(),
            bytes: 0,
            journal: None,
            run: RunShared::default(),
            trace: None,
        }
    }

    pub(crate) fn take(&mut self) -> Vec<FollowUp> {
        self.bytes = 0;
        std::mem::take(&mut self.jobs)
    }

    /// The caps' verdict on one more job of `payload` bytes.
    fn admit(&self, grant: &FollowUpGrant, payload: usize) -> Result<(), Refused> {
        if self.jobs.len() as u64 >= u64::from(grant.max_count) {
            return Err(Refused::LimitExceeded(format!(
                "this attempt already enqueued {} follow-up jobs, its cap (the tenant's max_follow_ups)",
                grant.max_count
            )));
        }
        let bytes = self.bytes.saturating_add(payload as u64);
        if bytes > grant.max_bytes {
            return Err(Refused::LimitExceeded(format!(
                "this attempt's follow-up payloads would be {bytes} bytes, over its cap of {} (the tenant's max_follow_up_bytes)",
                grant.max_bytes
            )));
        }
        Ok(())
    }
}

/// Why an `enqueue` was refused, whatever the contract (each version's
/// `enqueue-error` has these cases).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    UnknownJobType(String),
    Invalid(String),
    LimitExceeded(String),
}

/// `From<Refused>` for one contract's `enqueue-error` (the cases are the same).
macro_rules! enqueue_error_from_refused {
    ($error:ty) => {
        impl From<Refused> for $error {
            fn from(refused: Refused) -> Self {
                match refused {
                    Refused::UnknownJobType(m) => <$error>::UnknownJobType(m),
                    Refused::Invalid(m) => <$error>::Invalid(m),
                    Refused::LimitExceeded(m) => <$error>::LimitExceeded(m),
                }
            }
        }
    };
}
pub(crate) use enqueue_error_from_refused;

enqueue_error_from_refused!(EnqueueError);

/// The follow-up job 0.2's `enqueue` asks for.
fn follow_up(
    job_type: String,
    payload: Vec<u8>,
    options: EnqueueOptions,
) -> Result<FollowUp, Refused> {
    if options.delay_ms.is_some() && options.run_at_ms.is_some() {
        return Err(Refused::Invalid(
            "set at most one of delay-ms and run-at-ms".to_owned(),
        ));
    }
    Ok(FollowUp {
        job_type,
        payload,
        priority: options.priority,
        delay: options.delay_ms.map(Duration::from_millis),
        run_at_ms: options.run_at_ms,
        max_attempts: options.max_attempts,
        idempotency_key: options.idempotency_key,
        concurrency_key: None,
        id: None,
        trace: None,
    })
}

impl Host for FollowUpBuffer {
    async fn enqueue(
        &mut self,
        job_type: String,
        payload: Vec<u8>,
        options: EnqueueOptions,
    ) -> wasmtime::Result<Result<(), EnqueueError>> {
        let fingerprint = format!(
            "{job_type} #{}",
            short_hash(format!("{payload:?} {options:?}").as_bytes())
        );
        let job = follow_up(job_type, payload, options);
        let answer = self.enqueue(job, fingerprint, false).await?;
        Ok(answer.map(|_| ()).map_err(EnqueueError::from))
    }
}

/// An `enqueue` answer as journaled: `ok` (0.2) or `ok` and the id on a second line
/// (0.3), or the error's case and message on two lines.
fn encode(answer: &Result<Option<u64>, Refused>) -> (Vec<u8>, String) {
    let (case, message) = match answer {
        Ok(None) => return (b"ok".to_vec(), "ok".to_owned()),
        Ok(Some(id)) => return (format!("ok\n{id}").into_bytes(), format!("ok, job {id}")),
        Err(Refused::UnknownJobType(m)) => ("unknown-job-type", m),
        Err(Refused::Invalid(m)) => ("invalid", m),
        Err(Refused::LimitExceeded(m)) => ("limit-exceeded", m),
    };
    (format!("{case}\n{message}").into_bytes(), case.to_owned())
}

fn decode(bytes: &[u8]) -> Result<Option<u64>, Refused> {
    let text = String::from_utf8_lossy(bytes);
    let (case, message) = text.split_once('\n').unwrap_or((&text, ""));
    let message = message.to_owned();
    match case {
        "ok" => Ok(message.parse().ok()),
        "unknown-job-type" => Err(Refused::UnknownJobType(message)),
        "limit-exceeded" => Err(Refused::LimitExceeded(message)),
        _ => Err(Refused::Invalid(message)),
    }
}

impl FollowUpBuffer {
    /// One `enqueue` of either contract: journaled (durable) or live. `with_id`: reserve
    /// the job's id (0.3; an event's is 0). The answer is the id (`None` without one).
    async fn enqueue(
        &mut self,
        job: Result<FollowUp, Refused>,
        fingerprint: String,
        with_id: bool,
    ) -> wasmtime::Result<Result<Option<u64>, Refused>> {
        let Some(journal) = self.journal.clone() else {
            return self.enqueue_live(job, with_id).await;
        };
        match journal.step("enqueue", &fingerprint) {
            Step::Replay(result) => {
                // Answered as recorded; an accepted job is buffered again (this run's
                // completion or suspension inserts it, once) without asking the host's
                // check again, under the id it was given.
                let answer = decode(&result);
                if let (Ok(id), Ok(mut job)) = (&answer, job) {
                    job.id = *id;
                    self.buffer(job);
                }
                Ok(answer)
            }
            Step::Diverged => Ok(Err(Refused::Invalid(
                "the replay diverged from the journal".to_owned(),
            ))),
            Step::Live(seq) => {
                let answer = self.enqueue_live(job, with_id).await?;
                let (bytes, summary) = encode(&answer);
                journal.record(seq, "enqueue", fingerprint, summary, bytes);
                Ok(answer)
            }
        }
    }

    fn buffer(&mut self, job: FollowUp) {
        if let Some(id) = job.id {
            self.run.enqueued(id);
        }
        self.bytes += job.payload.len() as u64;
        self.jobs.push(job);
    }

    async fn enqueue_live(
        &mut self,
        job: Result<FollowUp, Refused>,
        with_id: bool,
    ) -> wasmtime::Result<Result<Option<u64>, Refused>> {
        let Some(grant) = self.grant.clone() else {
            return Ok(Err(Refused::LimitExceeded(
                "this host runs the job without follow-up jobs".to_owned(),
            )));
        };
        let mut job = match job {
            Ok(job) => job,
            Err(refused) => return Ok(Err(refused)),
        };
        if let Err(refused) = self.admit(&grant, job.payload.len()) {
            return Ok(Err(refused));
        }
        let refusal = match grant.check.check(&job).await {
            Ok(()) if !with_id => None,
            Ok(()) if job.job_type == EVENT_JOB_TYPE => {
                job.id = Some(0);
                None
            }
            Ok(()) => match grant.check.reserve_id().await {
                Ok(id) => {
                    job.id = Some(id);
                    None
                }
                Err(refusal) => Some(refusal),
            },
            Err(refusal) => Some(refusal),
        };
        match refusal {
            None => {
                let id = job.id;
                if let Some(trace) = &self.trace {
                    job.trace = Some(enqueue_span(trace, &job));
                }
                self.buffer(job);
                Ok(Ok(id))
            }
            Some(FollowUpRefusal::UnknownJobType(name)) => Ok(Err(Refused::UnknownJobType(name))),
            Some(FollowUpRefusal::Invalid(message)) => Ok(Err(Refused::Invalid(message))),
            Some(FollowUpRefusal::Unavailable(why)) => {
                Err(wasmtime::Error::new(FollowUpUnavailable(why)))
            }
        }
    }
}

/// The span of an accepted enqueue (ended at once: the job exists when the attempt's
/// end is written), whose context the child continues.
fn enqueue_span(trace: &AttemptTrace, job: &FollowUp) -> TraceContext {
    let event = job.job_type == EVENT_JOB_TYPE;
    let mut span = trace.child(SpanKind::Producer, || {
        if event {
            "send event".into()
        } else {
            format!("enqueue {}", job.job_type).into()
        }
    });
    if span.is_recording() {
        span.set("messaging.system", "sluice");
        span.set("messaging.operation.type", "send");
        if !event {
            span.set("sluice.job.type", job.job_type.as_str());
        }
        if let Some(id) = job.id.filter(|id| *id > 0) {
            span.set("sluice.job.id", id);
        }
    }
    let context = span.context().clone();
    span.end();
    context
}

#[cfg(test)]
mod tests;
