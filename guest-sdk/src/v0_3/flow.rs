//! Flow control from inside a task (`sluice:task/flow@0.3.0`, docs/flow-control.md).

use std::time::Duration;

use super::bindings::sluice::task::flow as wit;

/// Ends this run and runs the job again after `delay` (whole milliseconds, rounded up),
/// without spending an attempt: "the API said 429, come back in 30 s". The next run gets
/// the same `job.attempt`, after passing the type's concurrency keys, rate limits and
/// pauses again.
///
/// - **Type that is not durable:** this call never returns. The next run starts `run`
///   from the beginning, and follow-up jobs enqueued in this run are dropped (the next
///   run asks for them again).
/// - **Durable type:** follow-up jobs enqueued so far are inserted, and the next run
///   replays the journal up to this call, which then returns: call again what was
///   refused after it (a replayed response would be the same refusal). This loop is
///   right in both kinds of type:
///
/// ```no_run
/// # use std::time::Duration;
/// # use sluice_guest::{http, v0_3::flow};
/// # fn demo() -> Result<http::Response, http::HttpError> {
/// let response = loop {
///     let response = http::get("https://api.example.com/report")?;
///     if response.status != 429 {
///         break response;
///     }
///     flow::snooze(Duration::from_secs(30));
/// };
/// # Ok(response) }
/// ```
///
/// Snoozes are counted per job and bounded by the type's `--max-snoozes`: one beyond it
/// does not return either, but fails the attempt (retryable, an attempt spent) with a
/// reason naming the limit.
pub fn snooze(delay: Duration) {
    wit::snooze(super::millis(delay));
}
