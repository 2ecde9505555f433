//! Follow-up jobs (`sluice:task/jobs@0.3.0`): as [`crate::jobs`], with the same
//! [`Options`] and [`EnqueueError`], but [`enqueue`] returns the id the child will have,
//! to await it with [`crate::v0_3::durable::await_jobs`], and
//! [`Options::concurrency_key`] is carried to the host.
//!
//! The jobs are buffered by the host and inserted with this run's completion or, in a
//! durable type, with the suspension of a [`durable`](crate::v0_3::durable) or
//! [`flow`](crate::v0_3::flow) call: a parent enqueues its children and awaits them in
//! the same run. A run that fails, or snoozes in a type that is not durable, leaves none
//! (and its ids stay unused). In a durable type the id is journaled: a replayed run gets
//! the same id and the job is created once. An [`Options::idempotency_key`] that already
//! names a job makes the id stand for that job; the reserved type `sluice.event` returns
//! id 0, which names no job.
//!
//! ```no_run
//! use sluice_guest::v0_3::jobs::{self, Options};
//!
//! # fn demo() -> Result<(), sluice_guest::TaskError> {
//! let id: u64 = jobs::enqueue_json(
//!     "sync-account",
//!     &sluice_guest::serde_json::json!({ "account": 7 }),
//!     Options::default().concurrency_key("account-7"),
//! )?;
//! # Ok(()) }
//! ```

pub use crate::jobs::{EnqueueError, Options};

use super::bindings::sluice::task::jobs as wit;

enqueue_error_from!(v0_3::bindings::sluice::task::jobs);

/// Buffers one follow-up job of `job_type` with `payload` (JSON by convention) and returns
/// its id.
pub fn enqueue(job_type: &str, payload: &[u8], options: Options) -> Result<u64, EnqueueError> {
    Ok(wit::enqueue(job_type, payload, &options.into())?)
}

/// [`enqueue`] with `payload` serialized as JSON.
pub fn enqueue_json<T: serde::Serialize + ?Sized>(
    job_type: &str,
    payload: &T,
    options: Options,
) -> Result<u64, EnqueueError> {
    enqueue(job_type, &crate::jobs::json_payload(payload)?, options)
}
