//! Checks on request fields that the HTTP layer names itself (`jobs[3].type`, the `type`
//! query parameter, a path segment), made before the store sees them so the error names
//! the field as the client wrote it. The store checks the same things again for every
//! other caller (CLI, tests); its messages name its own fields.
//!
//! Must not: hold rules of its own. The bounds come from `sluice_store`.

use chrono::{DateTime, Utc};
use sluice_store::{MAX_DELAY, RUN_AT_MAX, RUN_AT_MIN};

use super::error::ApiError;

/// Refuses text Postgres cannot store: U+0000 anywhere.
pub(super) fn text(field: &str, value: &str) -> Result<(), ApiError> {
    match value.find('\0') {
        None => Ok(()),
        Some(at) => Err(ApiError::bad_request(format!(
            "invalid {field}: contains a NUL character (U+0000) at byte {at}; text fields cannot hold it"
        ))),
    }
}

/// `text` for an optional field.
pub(super) fn text_opt(field: &str, value: Option<&str>) -> Result<(), ApiError> {
    value.map_or(Ok(()), |v| text(field, v))
}

/// Refuses an instant outside the range every reader can decode.
pub(super) fn run_at(field: &str, at: DateTime<Utc>) -> Result<(), ApiError> {
    if (RUN_AT_MIN..=RUN_AT_MAX).contains(&at) {
        return Ok(());
    }
    Err(ApiError::bad_request(format!(
        "invalid {field}: {} is outside the accepted range 1970-01-01T00:00:00Z..=9999-12-31T23:59:59.999999Z",
        at.to_rfc3339()
    )))
}

/// Refuses a delay longer than the store accepts.
pub(super) fn delay(field: &str, delay: std::time::Duration) -> Result<(), ApiError> {
    if delay <= MAX_DELAY {
        return Ok(());
    }
    Err(ApiError::bad_request(format!(
        "invalid {field}: {}s is longer than the longest accepted delay, 100 years ({}s); give run_at instead",
        delay.as_secs(),
        MAX_DELAY.as_secs()
    )))
}
