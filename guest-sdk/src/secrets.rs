//! The tenant's secrets (contract `sluice:task@0.2.0`, `sluice:task/secrets`): API keys
//! and passwords an operator stored with `sluice secrets set NAME`, read by name. A
//! contract 0.3 task reads them with [`crate::v0_3::secrets::get`], which behaves the same.
//!
//! A task reads only the names its job type is granted
//! (`sluice types set T --secret STRIPE_KEY`); any other name is
//! [`SecretError::NotGranted`]. A granted name the tenant has not set (yet) is
//! [`SecretError::NotFound`], and the host adds a `WARN` line to the attempt's log. Every
//! value read is masked as `[secret NAME]` in everything the host keeps of the attempt —
//! log lines, stdout/stderr, the error message, the output — but only as the exact value:
//! a value the task transforms (base64, hex, URL-encoded) is not recognised, so log and
//! return values, never derived forms.
//!
//! ```no_run
//! use sluice_guest::{http, secrets, TaskError};
//!
//! # fn demo() -> Result<(), TaskError> {
//! let key = secrets::get("STRIPE_KEY")?; // not granted / not set -> TaskError::Fatal
//! let charge = http::Request::post("https://api.stripe.com/v1/charges")
//!     .header("authorization", format!("Bearer {key}"))
//!     .send()?;
//! # Ok(()) }
//! ```

use std::fmt;

use crate::TaskError;

/// Why a secret could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SecretError {
    /// The job type is not granted this name (`sluice types set T --secret NAME`).
    NotGranted(String),
    /// Granted, but the tenant has not set it (`sluice secrets set NAME`).
    NotFound(String),
}

impl fmt::Display for SecretError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretError::NotGranted(name) => write!(
                f,
                "secret {name}: not-granted (grant it with `sluice types set TYPE --secret {name}`)"
            ),
            SecretError::NotFound(name) => write!(
                f,
                "secret {name}: not-found (granted, but not set: `sluice secrets set {name}`)"
            ),
        }
    }
}

impl std::error::Error for SecretError {}

/// A missing or ungranted secret will be missing on the next attempt too: `fatal`.
impl From<SecretError> for TaskError {
    fn from(e: SecretError) -> Self {
        TaskError::fatal(e.to_string())
    }
}

secrets_get!(bindings::sluice::task::secrets);
