//! [`Grants`]: what one attempt may reach beyond its own instance, as the host resolved
//! it for the job's type and tenant before the attempt starts. Each capability is `None`
//! (denied) unless granted; the sandbox only applies what it is handed here and never
//! looks anything up itself.
//!
//! Must not: read configuration or the database (the host resolves grants), or hold
//! anything that outlives the attempt.

use std::sync::Arc;

use crate::egress_hooks::HttpGrant;
use crate::follow_ups::FollowUpGrant;

/// Everything an attempt is granted beyond `sluice:task/host`; `Default` grants nothing.
#[derive(Clone, Default)]
pub struct Grants {
    /// Outbound HTTP through the egress policy (`None`: every request is denied).
    pub http: Option<Arc<HttpGrant>>,
    /// Follow-up jobs, within caps (`None`: every `enqueue` is refused).
    pub follow_ups: Option<Arc<FollowUpGrant>>,
}
