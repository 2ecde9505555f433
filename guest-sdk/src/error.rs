//! [`TaskError`] (how an attempt fails), [`TaskResult`], and [`ResultExt`] to classify
//! foreign errors as retryable or fatal with `?`.

use std::fmt;

/// What a task returns: `Ok(output bytes)` or how the attempt failed.
pub type TaskResult = Result<Vec<u8>, TaskError>;

/// How an attempt failed. The message is stored as the job's `last_error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskError {
    /// Transient: the host retries with backoff while attempts remain, then the job is `dead`.
    Retry(String),
    /// Permanent: the job becomes `dead` at once (never replay a payment).
    Fatal(String),
}

impl TaskError {
    /// A transient failure: try again later.
    pub fn retry(message: impl Into<String>) -> Self {
        TaskError::Retry(message.into())
    }

    /// A permanent failure: do not try again.
    pub fn fatal(message: impl Into<String>) -> Self {
        TaskError::Fatal(message.into())
    }

    /// The message, whichever the kind.
    pub fn message(&self) -> &str {
        match self {
            TaskError::Retry(m) | TaskError::Fatal(m) => m,
        }
    }

    /// True for [`TaskError::Retry`].
    pub fn is_retry(&self) -> bool {
        matches!(self, TaskError::Retry(_))
    }
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskError::Retry(m) => write!(f, "retry: {m}"),
            TaskError::Fatal(m) => write!(f, "fatal: {m}"),
        }
    }
}

impl std::error::Error for TaskError {}

/// Malformed JSON never gets better by retrying.
impl From<serde_json::Error> for TaskError {
    fn from(e: serde_json::Error) -> Self {
        TaskError::Fatal(format!("invalid JSON: {e}"))
    }
}

/// Invalid UTF-8 never gets better by retrying.
impl From<std::str::Utf8Error> for TaskError {
    fn from(e: std::str::Utf8Error) -> Self {
        TaskError::Fatal(format!("invalid UTF-8: {e}"))
    }
}

/// Turn any `Result<T, E: Display>` into a `Result<T, TaskError>` of the chosen kind, with a
/// short context phrase: `fetch(url).or_retry("fetch rates")?`.
pub trait ResultExt<T> {
    /// On error, [`TaskError::Retry`] with message `"{context}: {error}"`.
    fn or_retry(self, context: &str) -> Result<T, TaskError>;
    /// On error, [`TaskError::Fatal`] with message `"{context}: {error}"`.
    fn or_fatal(self, context: &str) -> Result<T, TaskError>;
}

impl<T, E: fmt::Display> ResultExt<T> for Result<T, E> {
    fn or_retry(self, context: &str) -> Result<T, TaskError> {
        self.map_err(|e| TaskError::Retry(format!("{context}: {e}")))
    }

    fn or_fatal(self, context: &str) -> Result<T, TaskError> {
        self.map_err(|e| TaskError::Fatal(format!("{context}: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors_and_display() {
        assert_eq!(TaskError::retry("later"), TaskError::Retry("later".into()));
        assert_eq!(TaskError::fatal("no").to_string(), "fatal: no");
        assert!(TaskError::retry("x").is_retry());
        assert_eq!(TaskError::fatal("why").message(), "why");
    }

    #[test]
    fn result_ext_adds_context() {
        let r: Result<(), &str> = Err("refused");
        assert_eq!(
            r.or_retry("connect"),
            Err(TaskError::retry("connect: refused"))
        );
        assert_eq!(r.or_fatal("parse"), Err(TaskError::fatal("parse: refused")));
    }
}
