//! The one error type of the client: an answer of the API that is an error (its status,
//! its code as [`ErrorCode`], its message, `Retry-After`), a connection that failed, a
//! `wait` that ran out of time (with the job as last seen), and answers or settings that
//! make no sense.
//!
//! Owns: [`Error`] and its helpers. Must not: decide what to retry (callers do, with
//! [`Error::is_retryable`] and `retry_after` as hints).

use std::time::Duration;

use crate::generated::{ErrorCode, JobView};

/// What can go wrong calling the API.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server answered with an error: `{"error": {"code", "message"}}`.
    #[error("HTTP {status} {code}: {message}")]
    Api {
        /// The HTTP status (400, 401, 404, 409, 429, 503, ...).
        status: u16,
        /// The API's code (`not_found`, `job_type_not_found`, ...); a code this client
        /// does not know is kept in [`ErrorCode::Other`] (empty when the body was not the
        /// API's error shape, e.g. a proxy's page; `message` then holds its start).
        code: ErrorCode,
        /// The server's message, for people.
        message: String,
        /// Seconds to wait before trying again (`Retry-After` of 429 and 503 answers).
        retry_after: Option<u64>,
    },
    /// The request did not get an answer: connection refused or reset, DNS, TLS, or the
    /// request's own timeout.
    #[error("no answer from {}: {}", where_to(.0), root_cause(.0))]
    Transport(#[source] reqwest::Error),
    /// [`crate::Client::wait`] ran out of time before the job finished; `job` is the job
    /// as last seen (its `state` is `pending`, `running` or `waiting`).
    #[error("job {} is still {} after waiting {waited:?}", job.id, job.state)]
    Timeout {
        /// The job as the last answer showed it.
        job: Box<JobView>,
        /// How long the client waited.
        waited: Duration,
    },
    /// A 2xx answer whose body is not what the document says.
    #[error("unexpected answer (HTTP {status}): {reason}")]
    Decode {
        /// The HTTP status.
        status: u16,
        /// What did not match.
        reason: String,
    },
    /// The client cannot be set up or the request cannot be built (a bad base URL, a
    /// value that does not serialise).
    #[error("{0}")]
    Setup(String),
}

/// The URL a failed request went to (its origin and path).
fn where_to(error: &reqwest::Error) -> String {
    error
        .url()
        .map_or_else(|| "the server".to_owned(), |url| url.to_string())
}

/// The innermost cause of a failed request (`Connection refused`, a certificate error),
/// which says more than reqwest's own message.
fn root_cause(error: &reqwest::Error) -> String {
    let mut cause: &dyn std::error::Error = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

impl Error {
    /// The API's error code, for [`Error::Api`].
    pub fn code(&self) -> Option<&ErrorCode> {
        match self {
            Error::Api { code, .. } => Some(code),
            _ => None,
        }
    }

    /// The HTTP status, for [`Error::Api`] and [`Error::Decode`].
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Api { status, .. } | Error::Decode { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// How long the server asked to wait before trying again, if it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Error::Api {
                retry_after: Some(secs),
                ..
            } => Some(Duration::from_secs(*secs)),
            _ => None,
        }
    }

    /// True for what may pass when tried again: no answer, 429, 503 (`unavailable`,
    /// `contended`), 408.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Transport(_) => true,
            Error::Api { status, .. } => matches!(status, 408 | 429 | 503),
            _ => false,
        }
    }
}
