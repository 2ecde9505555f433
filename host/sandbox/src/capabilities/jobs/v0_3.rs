//! `sluice:task/jobs@0.3.0`: 0.2's `enqueue` returning the follow-up job's id (reserved
//! by the host's check; an event's is 0) and taking a `concurrency-key` (issue #38).
//!
//! Must not: differ from 0.2's enqueue in anything else (`mod.rs` does the work).

use super::{EVENT_JOB_TYPE, FollowUp, FollowUpBuffer, Refused};
use crate::host_imports::v0_2::sluice::task::jobs as v0_2;
use crate::host_imports::v0_3::sluice::task::jobs::{EnqueueError, EnqueueOptions, Host};
use crate::journal::codec::short_hash;

super::enqueue_error_from_refused!(EnqueueError);

/// The follow-up job 0.3's `enqueue` asks for: 0.2's, with a concurrency key.
fn follow_up(
    job_type: String,
    payload: Vec<u8>,
    options: EnqueueOptions,
) -> Result<FollowUp, Refused> {
    if options.concurrency_key.is_some() && job_type == EVENT_JOB_TYPE {
        return Err(Refused::Invalid(
            "an event (sluice.event) takes no concurrency-key".to_owned(),
        ));
    }
    let as_0_2 = v0_2::EnqueueOptions {
        priority: options.priority,
        delay_ms: options.delay_ms,
        run_at_ms: options.run_at_ms,
        max_attempts: options.max_attempts,
        idempotency_key: options.idempotency_key,
    };
    let mut job = super::follow_up(job_type, payload, as_0_2)?;
    job.concurrency_key = options.concurrency_key;
    Ok(job)
}

impl Host for FollowUpBuffer {
    async fn enqueue(
        &mut self,
        job_type: String,
        payload: Vec<u8>,
        options: EnqueueOptions,
    ) -> wasmtime::Result<Result<u64, EnqueueError>> {
        let fingerprint = format!(
            "{job_type} #{}",
            short_hash(format!("{payload:?} {options:?}").as_bytes())
        );
        let job = follow_up(job_type, payload, options);
        let answer = self.enqueue(job, fingerprint, true).await?;
        Ok(answer.map(|id| id.unwrap_or(0)).map_err(EnqueueError::from))
    }
}
