//! How a sent signal looks in JSON ([`SignalSent`]: `POST /v1/jobs/{id}/signals/{name}`
//! and `sluice jobs signal ID NAME --json`).
//!
//! Owns: this shape. Must not: read or write anything.

use serde::Serialize;
use utoipa::ToSchema;

/// A signal sent to a job (docs/durable.md).
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SignalSent {
    /// The job it was sent to.
    pub job_id: i64,
    /// The signal's name.
    pub name: String,
    /// True when the job was waiting for this name and is due again now; false when the
    /// signal is kept until the job awaits it.
    pub woke: bool,
}
