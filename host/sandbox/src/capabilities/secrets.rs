//! `sluice:task/secrets` (contracts 0.2 and 0.3): `get(name)` answers from the attempt's
//! [`SecretGrant`] only — `not-granted` for a name the type is not granted, `not-found`
//! (and a `WARN` line in the attempt's log) for a granted name the tenant has not set,
//! else the value, which is then recorded in the attempt's [`SecretsState`] so that
//! `run.rs` masks it in everything kept of the attempt.
//!
//! A durable job journals each `get` as its name and outcome, never the value.
//!
//! Must not: read the database, decrypt, log or journal a value, or trap on guest input.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use wasmtime::component::{HasSelf, Linker};

use sluice_trace::SpanKind;

use super::shape::{Attempt, Capability, StoreData};
use crate::attempt_trace::AttemptTrace;
use crate::contract::Contract;
use crate::host_imports::v0_2::sluice::task::secrets::{self as v0_2, Host, SecretError};
use crate::host_imports::v0_3::sluice::task::secrets as v0_3;
use crate::journal::Journal;
use crate::log_buffer::LogBuffer;

/// The capability (see [`Capability`]).
pub(crate) struct Secrets;

/// One attempt's grant and what `get` revealed of it.
pub(crate) struct SecretsState {
    /// The type's secret grant (`None`: nothing granted).
    grant: Option<Arc<SecretGrant>>,
    /// (name, value) of every secret `get` returned: masked in the report.
    revealed: Vec<(String, String)>,
    /// Granted names already logged as not set (one line per name).
    warned_unset: Vec<String>,
    logs: LogBuffer,
    /// A durable job's journal: each `get` is journaled as its name and outcome (never
    /// the value, which a replay reads from the grant again).
    journal: Option<Journal>,
    /// The trace the attempt continues: each read is a span (the name, never the value).
    trace: Option<AttemptTrace>,
}

impl SecretsState {
    /// (name, value) of every secret the guest read, in the order it first read each.
    pub(crate) fn revealed(&self) -> &[(String, String)] {
        &self.revealed
    }
}

impl Capability for Secrets {
    type Grant = SecretGrant;
    type State = SecretsState;

    fn state(grant: Option<Arc<SecretGrant>>, attempt: &Attempt<'_>) -> SecretsState {
        SecretsState {
            grant,
            revealed: Vec::new(),
            warned_unset: Vec::new(),
            logs: attempt.logs.clone(),
            journal: attempt.journal.cloned(),
            trace: attempt.trace.cloned(),
        }
    }

    fn add_to_linker<T: StoreData>(
        linker: &mut Linker<T>,
        max: Contract,
        get: fn(&mut T) -> &mut SecretsState,
    ) -> wasmtime::Result<()> {
        if max >= Contract::V0_2 {
            v0_2::add_to_linker::<T, HasSelf<SecretsState>>(linker, get)?;
        }
        if max >= Contract::V0_3 {
            v0_3::add_to_linker::<T, HasSelf<SecretsState>>(linker, get)?;
        }
        Ok(())
    }
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
enum Lookup<'a> {
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

    fn lookup(&self, name: &str) -> Lookup<'_> {
        match self.values.get(name) {
            None => Lookup::NotGranted,
            Some(None) => Lookup::NotSet,
            Some(Some(value)) => Lookup::Value(value),
        }
    }
}

impl Host for SecretsState {
    fn get(&mut self, name: String) -> Result<String, SecretError> {
        let Some(trace) = &self.trace else {
            return self.read(name);
        };
        let mut span = trace.child(SpanKind::Internal, || "secret read".into());
        let result = self.read(name.clone());
        if span.is_recording() {
            span.set("sluice.secret.name", name);
            span.set(
                "sluice.secret.outcome",
                match &result {
                    Ok(_) => "found",
                    Err(SecretError::NotFound) => "not-found",
                    Err(_) => "not-granted",
                },
            );
            span.end();
        }
        result
    }
}

impl SecretsState {
    /// One read, journaled for a durable job.
    fn read(&mut self, name: String) -> Result<String, SecretError> {
        let Some(journal) = self.journal.clone() else {
            return self.lookup(name);
        };
        // The outcome is journaled, not the value: a replay answers the recorded outcome
        // with the value the grant holds now (a secret set again meanwhile is the new one).
        let mut live = None;
        let outcome = journal.call("secret", &name, || {
            let result = self.lookup(name.clone());
            let code = match &result {
                Ok(_) => "found",
                Err(SecretError::NotFound) => "not-found",
                Err(_) => "not-granted",
            };
            live = Some(result);
            (code.as_bytes().to_vec(), code.to_owned())
        });
        if let Some(result) = live {
            return result;
        }
        match outcome.as_slice() {
            b"found" => self.lookup(name).or(Err(SecretError::NotFound)),
            b"not-found" => Err(SecretError::NotFound),
            _ => Err(SecretError::NotGranted),
        }
    }
}

/// 0.3's `get` is 0.2's, under its 0.3 name.
impl v0_3::Host for SecretsState {
    fn get(&mut self, name: String) -> Result<String, v0_3::SecretError> {
        Host::get(self, name).map_err(|e| match e {
            SecretError::NotGranted => v0_3::SecretError::NotGranted,
            SecretError::NotFound => v0_3::SecretError::NotFound,
        })
    }
}

impl SecretsState {
    fn lookup(&mut self, name: String) -> Result<String, SecretError> {
        let Some(grant) = self.grant.clone() else {
            return Err(SecretError::NotGranted);
        };
        match grant.lookup(&name) {
            Lookup::NotGranted => Err(SecretError::NotGranted),
            Lookup::NotSet => {
                if !self.warned_unset.contains(&name) {
                    self.logs.line(
                        "WARN",
                        &format!(
                            "secret {name} is granted but not set (sluice secrets set {name})"
                        ),
                    );
                    self.warned_unset.push(name);
                }
                Err(SecretError::NotFound)
            }
            Lookup::Value(value) => {
                if !self.revealed.iter().any(|(n, _)| *n == name) {
                    self.revealed.push((name, value.to_owned()));
                }
                Ok(value.to_owned())
            }
        }
    }
}
