//! `sluice:task/secrets` (contract 0.2): `get(name)` answers from the attempt's
//! [`SecretGrant`](crate::SecretGrant) only — `not-granted` for a name the type is not
//! granted, `not-found` (and a `WARN` line in the attempt's log) for a granted name the
//! tenant has not set, else the value, which is then recorded in the attempt's state so
//! that `run.rs` masks it in everything kept of the attempt.
//!
//! Must not: read the database, decrypt, log a value, or trap on guest input.

use crate::grants::Lookup;
use crate::host_imports::v0_2::sluice::task::secrets::{Host, SecretError};
use crate::store::HostState;

impl Host for HostState {
    fn get(&mut self, name: String) -> Result<String, SecretError> {
        let Some(grant) = self.secrets.clone() else {
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
