//! Follow-up jobs (`sluice:task/jobs` of contract 0.2): the host side of `enqueue`.
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

use wasmtime::component::{HasSelf, Linker};

use super::shape::{Attempt, Capability, StoreData};
use crate::contract::Contract;
use crate::host_imports::v0_2::sluice::task::jobs::{
    self as v0_2, EnqueueError, EnqueueOptions, Host,
};
use crate::journal::codec::short_hash;
use crate::journal::{Journal, Step};

/// The capability (see [`Capability`]).
pub(crate) struct Jobs;

impl Capability for Jobs {
    type Grant = FollowUpGrant;
    type State = FollowUpBuffer;

    fn state(grant: Option<Arc<FollowUpGrant>>, attempt: &Attempt<'_>) -> FollowUpBuffer {
        let mut buffer = FollowUpBuffer::new(grant);
        buffer.journal = attempt.journal.cloned();
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

/// The host's check of one follow-up job, made when the guest asks for it (the job's
/// tenant is the attempt's; the host knows it).
pub trait FollowUpCheck: Send + Sync {
    /// `Ok` if the job may be enqueued; otherwise why not, passed to the guest.
    fn check<'a>(&'a self, follow_up: &'a FollowUp) -> CheckFuture<'a>;
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
}

impl FollowUpBuffer {
    pub(crate) fn new(grant: Option<Arc<FollowUpGrant>>) -> Self {
        FollowUpBuffer {
            grant,
            jobs: Vec::new(),
            bytes: 0,
            journal: None,
        }
    }

    pub(crate) fn take(&mut self) -> Vec<FollowUp> {
        self.bytes = 0;
        std::mem::take(&mut self.jobs)
    }

    /// The caps' verdict on one more job of `payload` bytes.
    fn admit(&self, grant: &FollowUpGrant, payload: usize) -> Result<(), EnqueueError> {
        if self.jobs.len() as u64 >= u64::from(grant.max_count) {
            return Err(EnqueueError::LimitExceeded(format!(
                "this attempt already enqueued {} follow-up jobs, its cap (the tenant's max_follow_ups)",
                grant.max_count
            )));
        }
        let bytes = self.bytes.saturating_add(payload as u64);
        if bytes > grant.max_bytes {
            return Err(EnqueueError::LimitExceeded(format!(
                "this attempt's follow-up payloads would be {bytes} bytes, over its cap of {} (the tenant's max_follow_up_bytes)",
                grant.max_bytes
            )));
        }
        Ok(())
    }
}

fn follow_up(
    job_type: String,
    payload: Vec<u8>,
    options: EnqueueOptions,
) -> Result<FollowUp, EnqueueError> {
    if options.delay_ms.is_some() && options.run_at_ms.is_some() {
        return Err(EnqueueError::Invalid(
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
    })
}

impl Host for FollowUpBuffer {
    async fn enqueue(
        &mut self,
        job_type: String,
        payload: Vec<u8>,
        options: EnqueueOptions,
    ) -> wasmtime::Result<Result<(), EnqueueError>> {
        let Some(journal) = self.journal.clone() else {
            return self.enqueue_live(job_type, payload, options).await;
        };
        let fingerprint = format!(
            "{job_type} #{}",
            short_hash(format!("{payload:?} {options:?}").as_bytes())
        );
        match journal.step("enqueue", &fingerprint) {
            Step::Replay(result) => {
                // Answered as recorded; an accepted job is buffered again (this run's
                // completion inserts it) without asking the host's check again.
                let answer = decode(&result);
                if answer.is_ok()
                    && let Ok(job) = follow_up(job_type, payload, options)
                {
                    self.bytes += job.payload.len() as u64;
                    self.jobs.push(job);
                }
                Ok(answer)
            }
            Step::Diverged => Ok(Err(EnqueueError::Invalid(
                "the replay diverged from the journal".to_owned(),
            ))),
            Step::Live(seq) => {
                let answer = self.enqueue_live(job_type, payload, options).await?;
                let (bytes, summary) = encode(&answer);
                journal.record(seq, "enqueue", fingerprint, summary, bytes);
                Ok(answer)
            }
        }
    }
}

/// An `enqueue` answer as journaled: `ok`, or the error's case and message on two lines.
fn encode(answer: &Result<(), EnqueueError>) -> (Vec<u8>, String) {
    let (case, message) = match answer {
        Ok(()) => return (b"ok".to_vec(), "ok".to_owned()),
        Err(EnqueueError::UnknownJobType(m)) => ("unknown-job-type", m),
        Err(EnqueueError::Invalid(m)) => ("invalid", m),
        Err(EnqueueError::LimitExceeded(m)) => ("limit-exceeded", m),
    };
    (format!("{case}\n{message}").into_bytes(), case.to_owned())
}

fn decode(bytes: &[u8]) -> Result<(), EnqueueError> {
    let text = String::from_utf8_lossy(bytes);
    let (case, message) = text.split_once('\n').unwrap_or((&text, ""));
    let message = message.to_owned();
    match case {
        "ok" => Ok(()),
        "unknown-job-type" => Err(EnqueueError::UnknownJobType(message)),
        "limit-exceeded" => Err(EnqueueError::LimitExceeded(message)),
        _ => Err(EnqueueError::Invalid(message)),
    }
}

impl FollowUpBuffer {
    async fn enqueue_live(
        &mut self,
        job_type: String,
        payload: Vec<u8>,
        options: EnqueueOptions,
    ) -> wasmtime::Result<Result<(), EnqueueError>> {
        let Some(grant) = self.grant.clone() else {
            return Ok(Err(EnqueueError::LimitExceeded(
                "this host runs the job without follow-up jobs".to_owned(),
            )));
        };
        if let Err(refused) = self.admit(&grant, payload.len()) {
            return Ok(Err(refused));
        }
        let job = match follow_up(job_type, payload, options) {
            Ok(job) => job,
            Err(refused) => return Ok(Err(refused)),
        };
        match grant.check.check(&job).await {
            Ok(()) => {
                self.bytes += job.payload.len() as u64;
                self.jobs.push(job);
                Ok(Ok(()))
            }
            Err(FollowUpRefusal::UnknownJobType(name)) => {
                Ok(Err(EnqueueError::UnknownJobType(name)))
            }
            Err(FollowUpRefusal::Invalid(message)) => Ok(Err(EnqueueError::Invalid(message))),
            Err(FollowUpRefusal::Unavailable(why)) => {
                Err(wasmtime::Error::new(FollowUpUnavailable(why)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Anything;

    impl FollowUpCheck for Anything {
        fn check<'a>(&'a self, _: &'a FollowUp) -> CheckFuture<'a> {
            Box::pin(async { Ok(()) })
        }
    }

    fn grant(max_count: u32, max_bytes: u64) -> FollowUpGrant {
        FollowUpGrant {
            max_count,
            max_bytes,
            check: Arc::new(Anything),
        }
    }

    fn options() -> EnqueueOptions {
        EnqueueOptions {
            priority: None,
            delay_ms: None,
            run_at_ms: None,
            max_attempts: None,
            idempotency_key: None,
        }
    }

    #[test]
    fn the_caps_refuse_the_job_past_the_count_or_the_bytes() {
        let grant = grant(2, 10);
        let mut buffer = FollowUpBuffer::new(Some(Arc::new(grant.clone())));
        assert!(buffer.admit(&grant, 4).is_ok());
        buffer
            .jobs
            .push(follow_up("a".into(), vec![0; 4], options()).unwrap());
        buffer.bytes = 4;
        let Err(EnqueueError::LimitExceeded(why)) = buffer.admit(&grant, 7) else {
            panic!("11 bytes is over 10");
        };
        assert!(why.contains("max_follow_up_bytes"), "{why}");
        assert!(buffer.admit(&grant, 6).is_ok(), "exactly at the cap");
        buffer
            .jobs
            .push(follow_up("b".into(), vec![0; 6], options()).unwrap());
        let Err(EnqueueError::LimitExceeded(why)) = buffer.admit(&grant, 0) else {
            panic!("a third job is over the count");
        };
        assert!(why.contains("max_follow_ups"), "{why}");
        assert_eq!(buffer.take().len(), 2);
        assert!(buffer.admit(&grant, 0).is_ok(), "taken: empty again");
    }

    #[test]
    fn journaled_answers_come_back_as_themselves() {
        for answer in [
            Ok(()),
            Err(EnqueueError::UnknownJobType("nope".into())),
            Err(EnqueueError::LimitExceeded("cap\nhit".into())),
        ] {
            let (bytes, _) = encode(&answer);
            assert_eq!(format!("{:?}", decode(&bytes)), format!("{answer:?}"));
        }
    }

    #[test]
    fn a_delay_and_an_instant_together_are_invalid() {
        let mut both = options();
        both.delay_ms = Some(1);
        both.run_at_ms = Some(1);
        let Err(EnqueueError::Invalid(why)) = follow_up("a".into(), Vec::new(), both) else {
            panic!("refused");
        };
        assert!(why.contains("delay-ms"), "{why}");
    }
}
