//! What an attempt may reach beyond its own instance, one module per capability, each
//! of the one shape of `shape.rs` ([`Capability`]): its grant type, its per-attempt
//! state, how that state is made from the grant, its linker setup, and the `Host` impls
//! of its imports (on its state). Today: `log` (`sluice:task/host`, every attempt),
//! `http` (`wasi:http`), `jobs` (follow-up jobs), `secrets`, `durable` (the journal of a
//! durable job, which `http`, `jobs` and `secrets` record their results in, and the
//! waits of contract 0.3), `flow` (`snooze`, contract 0.3).
//!
//! The `capabilities!` list at the end of this file assembles them: [`Grants`] (one
//! field per granted capability, as the host resolved it for the job's type and tenant),
//! [`Caps`] (one field of state per capability, held by the store's `HostState`) and
//! [`add_to_linker`]. **Adding a capability** touches its module and one line of that
//! list (`module::Type => grant_field: module::GrantType;`, or `module::Type;` for one
//! every attempt has; the compiler holds the grant type to the capability's);
//! reporting what it did (as `RunReport.http`) is one more line in `run.rs`.
//!
//! **Every host call of a capability passes one place**: its state's `Host` impl,
//! reached through the getter its `add_to_linker` hands the bindings (for `http`, the
//! hooks' `send_request`). The journal of a durable job (`crate::journal`) wraps there:
//! each journaled capability's state holds the attempt's journal (`Attempt::journal`)
//! and answers from it, or calls and records.
//!
//! Must not: read configuration or the database (the host resolves grants), decrypt
//! anything (secrets arrive as plain values), hold anything that outlives the attempt, or
//! name `HostState` (it sits above: it implements [`HasCaps`]).

mod shape;

use std::sync::Arc;

use wasmtime::component::Linker;

use crate::contract::Contract;
use shape::Capability;
pub(crate) use shape::{Attempt, StoreData};

/// The store data that holds every capability's state.
pub(crate) trait HasCaps {
    fn caps(&mut self) -> &mut Caps;
}

macro_rules! capabilities {
    (@grant $grants:ident) => { None };
    (@grant $grants:ident $field:ident) => { $grants.$field };
    ($($module:ident::$cap:ident $(=> $(#[$doc:meta])* $grant:ident: $grant_type:ty)?;)*) => {
        $(pub(crate) mod $module;)*

        /// Everything an attempt is granted beyond `sluice:task/host`; `Default` grants
        /// nothing. The sandbox applies what it is handed here and looks nothing up.
        #[derive(Clone, Default)]
        pub struct Grants {
            $($($(#[$doc])* pub $grant: Option<Arc<$grant_type>>,)?)*
        }

        /// One attempt's state of every capability, a field per module.
        pub(crate) struct Caps {
            $(pub(crate) $module: <$module::$cap as Capability>::State,)*
        }

        impl Caps {
            /// The state of every capability for one attempt under `grants`.
            pub(crate) fn new(grants: Grants, attempt: &Attempt<'_>) -> Caps {
                Caps {
                    $($module: <$module::$cap as Capability>::state(
                        capabilities!(@grant grants $($grant)?),
                        attempt,
                    ),)*
                }
            }
        }

        /// Links every capability's imports of contracts up to `max` into `linker`.
        pub(crate) fn add_to_linker<T: StoreData + HasCaps>(
            linker: &mut Linker<T>,
            max: Contract,
        ) -> wasmtime::Result<()> {
            $(<$module::$cap as Capability>::add_to_linker(linker, max, |data| {
                &mut data.caps().$module
            })?;)*
            Ok(())
        }
    };
}

capabilities! {
    log::Log;
    http::Http =>
        /// Outbound HTTP through the egress policy, or answered from recorded responses
        /// (`HttpGrant::recorded`; `None`: every request is denied).
        http: http::HttpGrant;
    jobs::Jobs =>
        /// Follow-up jobs, within caps (`None`: every `enqueue` is refused).
        follow_ups: jobs::FollowUpGrant;
    secrets::Secrets =>
        /// The tenant's secrets the type may read (`None`: every `secrets.get` is
        /// `not-granted`).
        secrets: secrets::SecretGrant;
    durable::Durable =>
        /// The job's journal so far and where new entries go (`None`: not durable; no
        /// journal is read or written).
        durable: crate::journal::DurableGrant;
    flow::Flow;
}
