//! [`Grants`]: what one attempt may reach beyond its own instance, as the host resolved
//! it for the job's type and tenant before the attempt starts. Each capability is `None`
//! (denied) unless granted; the sandbox only applies what it is handed here and never
//! looks anything up itself.
//!
//! Must not: read configuration or the database (the host resolves grants), decrypt
//! anything (secrets arrive as plain values), or hold anything that outlives the attempt.

use std::collections::BTreeMap;
use std::fmt;
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
    /// The tenant's secrets the type may read (`None`: every `secrets.get` is
    /// `not-granted`).
    pub secrets: Option<Arc<SecretGrant>>,
}

/// The secrets granted to one job type, resolved by the host inside the job's own
/// tenant: each granted name with its value, or `None` when the tenant has not set it
/// (the guest gets `not-found`). `Debug` shows names only.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SecretGrant {
    values: BTreeMap<String, Option<String>>,
}

impl fmt::Debug for SecretGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretGrant")
            .field("names", &self.values.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// What `secrets.get` finds for a name.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Lookup<'a> {
    NotGranted,
    NotSet,
    Value(&'a str),
}

impl SecretGrant {
    /// A grant of these names, each with its value or `None` (granted but not set).
    pub fn new(granted: impl IntoIterator<Item = (String, Option<String>)>) -> SecretGrant {
        SecretGrant {
            values: granted.into_iter().collect(),
        }
    }

    /// The granted names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(String::as_str)
    }

    pub(crate) fn lookup(&self, name: &str) -> Lookup<'_> {
        match self.values.get(name) {
            None => Lookup::NotGranted,
            Some(None) => Lookup::NotSet,
            Some(Some(value)) => Lookup::Value(value),
        }
    }
}
