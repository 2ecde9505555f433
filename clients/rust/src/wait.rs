//! [`Client::wait`]: waits for a job to finish (`completed`, `dead` or `cancelled`) by
//! long-polling `GET /v1/jobs/{id}?wait=<chunk>`, in chunks of at most 60 s, until it is
//! finished or the caller's timeout passes; and how durations are written for the API
//! (`250ms`, `30s`, `5m`, `2h`, `7d`).
//!
//! Decision (the same in every client): a finished job is returned whatever its state
//! (the caller checks `state`); running out of time is [`Error::Timeout`], carrying the
//! job as last seen. Must not: sleep between chunks, except when the server answered a
//! chunk early without the job finished (an old server without `wait`), so the loop
//! never spins.

use std::time::Duration;

use tokio::time::{Instant, sleep};

use crate::client::Client;
use crate::error::Error;
use crate::generated::{GetJobQuery, JobState, JobView};

/// The longest one `wait` request asks the server to hold the answer.
pub const MAX_WAIT_CHUNK: Duration = Duration::from_secs(60);

/// The pause after a chunk the server answered early with the job unfinished.
const EARLY_ANSWER_PAUSE: Duration = Duration::from_millis(200);

/// True for the states a job does not leave by itself: `completed`, `dead`, `cancelled`.
pub fn is_finished(state: &JobState) -> bool {
    matches!(
        state,
        JobState::Completed | JobState::Dead | JobState::Cancelled
    )
}

/// A duration as the API reads it, in its largest exact unit: `7d`, `2h`, `5m`, `30s`,
/// `250ms` (`0s` for zero; below a millisecond, rounded up to `1ms`).
pub fn format_duration(duration: Duration) -> String {
    let millis =
        duration.as_millis() + u128::from(!duration.subsec_nanos().is_multiple_of(1_000_000));
    if millis == 0 {
        return "0s".to_owned();
    }
    for (unit, size) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1000),
    ] {
        if millis.is_multiple_of(size) {
            return format!("{}{unit}", millis / size);
        }
    }
    format!("{millis}ms")
}

/// The `wait` of the next request: what is left of the caller's timeout, at most
/// [`MAX_WAIT_CHUNK`]; `None` when nothing is left (a plain read).
pub(crate) fn next_chunk(left: Duration) -> Option<Duration> {
    let chunk = left.min(MAX_WAIT_CHUNK);
    (chunk >= Duration::from_millis(1)).then_some(chunk)
}

impl Client {
    /// Waits up to `timeout` for job `id` to finish and returns it (`state` is
    /// `completed`, `dead` or `cancelled`: check it). Past `timeout`, returns
    /// [`Error::Timeout`] with the job as last seen. A zero timeout reads the job once.
    pub async fn wait(&self, id: i64, timeout: Duration) -> Result<JobView, Error> {
        let start = Instant::now();
        let deadline = start + timeout;
        loop {
            let chunk = next_chunk(deadline.saturating_duration_since(Instant::now()));
            let query = GetJobQuery {
                wait: chunk.map(format_duration),
            };
            let asked = Instant::now();
            let job = self.api().get_job(id, &query).await?;
            if is_finished(&job.state) {
                return Ok(job);
            }
            let now = Instant::now();
            if now >= deadline || chunk.is_none() {
                return Err(Error::Timeout {
                    job: Box::new(job),
                    waited: now - start,
                });
            }
            let held = now - asked;
            if let Some(chunk) = chunk
                && held < chunk
            {
                // Answered before the chunk ended, unfinished: pace the next request.
                let pause = EARLY_ANSWER_PAUSE.min(chunk - held).min(deadline - now);
                sleep(pause).await;
            }
        }
    }
}
