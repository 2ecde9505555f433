//! `sluice:task/jobs@0.3.0`: 0.2's `enqueue` returning the follow-up job's id (reserved
//! by the host's check; an event's is 0) and taking a `concurrency-key` (issue #38).
//!
//! Must not: differ from 0.2's enqueue in anything else (`mod.rs` does the work).

use std::time::Duration;

use super::{EVENT_JOB_TYPE, FollowUp, FollowUpBuffer, Refused};
use crate::host_imports::v0_3::sluice::task::jobs::{EnqueueError, EnqueueOptions, Host};
use crate::journal::codec::short_hash;

impl From<Refused> for EnqueueError {
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::UnknownJobType(m) => EnqueueError::UnknownJobType(m),
            Refused::Invalid(m) => EnqueueError::Invalid(m),
            Refused::LimitExceeded(m) => EnqueueError::LimitExceeded(m),
        }
    }
}

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
    if options.concurrency_key.is_some() && job_type == EVENT_JOB_TYPE {
        return Err(Refused::Invalid(
            "an event (sluice.event) takes no concurrency-key".to_owned(),
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
        concurrency_key: options.concurrency_key,
        id: None,
    })
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
