//! Flow control from inside a task (`sluice:task/flow@0.3.0`, docs/flow-control.md).

use std::time::Duration;

use super::bindings::sluice::task::flow as wit;
use crate::http::Response;

/// The longest snooze [`snooze_when_busy`] takes from a `Retry-After`: one hour (a server
/// asking for more gets this, and is asked again then).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

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

/// When `response` says the server is busy — 429 Too Many Requests or 503 Service
/// Unavailable — snoozes for its `Retry-After` (seconds or an HTTP-date, at most
/// [`MAX_RETRY_AFTER`]) or for `default` without a usable one, without spending an
/// attempt, and returns true once the snooze returns; for any other status returns false
/// at once. As [`snooze`] says, the snooze returns only in a durable type (a type that is
/// not durable runs `run` again from the start), so this loop sends again after it in both
/// kinds:
///
/// ```no_run
/// # use std::time::Duration;
/// # use sluice_guest::{http, v0_3::flow};
/// # fn demo() -> Result<http::Response, http::HttpError> {
/// let response = loop {
///     let response = http::get("https://api.example.com/report")?;
///     if !flow::snooze_when_busy(&response, Duration::from_secs(30)) {
///         break response;
///     }
/// };
/// # Ok(response) }
/// ```
pub fn snooze_when_busy(response: &Response, default: Duration) -> bool {
    match busy_delay(response.status, response.retry_after(), default) {
        Some(delay) => {
            snooze(delay);
            true
        }
        None => false,
    }
}

/// The snooze a response calls for: `None` unless 429 or 503.
fn busy_delay(status: u16, retry_after: Option<Duration>, default: Duration) -> Option<Duration> {
    matches!(status, 429 | 503).then(|| retry_after.unwrap_or(default).min(MAX_RETRY_AFTER))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_429_and_503_snooze_for_their_retry_after_or_the_default() {
        let default = Duration::from_secs(30);
        let asked = Some(Duration::from_secs(5));
        assert_eq!(busy_delay(429, asked, default), asked);
        assert_eq!(busy_delay(503, None, default), Some(default));
        assert_eq!(
            busy_delay(503, Some(Duration::ZERO), default),
            Some(Duration::ZERO)
        );
        assert_eq!(
            busy_delay(429, Some(Duration::from_secs(86_400)), default),
            Some(MAX_RETRY_AFTER)
        );
        for status in [200, 201, 404, 500, 502, 504] {
            assert_eq!(busy_delay(status, asked, default), None, "{status}");
        }
    }
}
