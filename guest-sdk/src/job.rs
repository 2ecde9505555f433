//! [`Job`]: one attempt of one job, as handed to the task, with payload decoding helpers.

use serde::de::DeserializeOwned;

use crate::TaskError;

/// One attempt of one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// The job's id (stable across attempts).
    pub id: u64,
    /// The job type this component is registered for.
    pub job_type: String,
    /// The tenant that owns the job.
    pub tenant: String,
    /// This attempt's number, starting at 1.
    pub attempt: u32,
    /// The attempt after which a retryable failure makes the job `dead`.
    pub max_attempts: u32,
    /// The payload bytes (JSON by convention).
    pub payload: Vec<u8>,
}

impl Job {
    /// The raw payload bytes.
    pub fn payload(&self) -> &[u8] {
        &self.payload
    }

    /// The payload as UTF-8 text; invalid UTF-8 is [`TaskError::Fatal`].
    pub fn text(&self) -> Result<&str, TaskError> {
        std::str::from_utf8(&self.payload)
            .map_err(|e| TaskError::fatal(format!("payload is not UTF-8: {e}")))
    }

    /// The payload decoded from JSON; malformed or mistyped JSON is [`TaskError::Fatal`]
    /// with serde's message (which names the line, column and offending field).
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, TaskError> {
        serde_json::from_slice(&self.payload)
            .map_err(|e| TaskError::fatal(format!("payload is not valid JSON for this task: {e}")))
    }

    /// Like [`Job::json`], but an empty (or all-whitespace) payload gives `T::default()`.
    pub fn json_or_default<T: DeserializeOwned + Default>(&self) -> Result<T, TaskError> {
        if self.payload.iter().all(u8::is_ascii_whitespace) {
            Ok(T::default())
        } else {
            self.json()
        }
    }

    /// True when a retryable failure of this attempt would make the job `dead`.
    pub fn is_last_attempt(&self) -> bool {
        self.attempt >= self.max_attempts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(payload: &[u8]) -> Job {
        Job {
            id: 7,
            job_type: "t".into(),
            tenant: "acme".into(),
            attempt: 1,
            max_attempts: 3,
            payload: payload.to_vec(),
        }
    }

    #[derive(serde::Deserialize, Default, Debug, PartialEq)]
    struct Args {
        n: u32,
    }

    #[test]
    fn json_decodes_and_reports_serde_errors_as_fatal() {
        assert_eq!(job(br#"{"n":3}"#).json::<Args>(), Ok(Args { n: 3 }));
        let err = job(br#"{"n":"x"}"#).json::<Args>().unwrap_err();
        assert!(!err.is_retry());
        assert!(err.message().contains("invalid type"), "{err}");
    }

    #[test]
    fn json_or_default_accepts_empty_payload() {
        assert_eq!(job(b"").json_or_default::<Args>(), Ok(Args::default()));
        assert!(job(b"{").json_or_default::<Args>().is_err());
    }

    #[test]
    fn text_rejects_invalid_utf8() {
        assert_eq!(job(b"hi").text(), Ok("hi"));
        assert!(job(&[0xff]).text().is_err());
        assert!(!job(b"").is_last_attempt());
    }
}
