//! Durable jobs (`docs/durable.md`): the capability whose grant makes an attempt
//! durable ([`DurableGrant`]: the job's journal so far and the host's sink) and whose
//! state is the attempt's [`Journal`], which the journaled capabilities (`http`,
//! `secrets`, `jobs`) and the WASI clocks and generators (`wasi_ctx.rs`) share through
//! [`Attempt::journal`]. It links nothing yet: `sluice:task/durable` (sleep, signals,
//! awaiting jobs) comes with contract 0.3.
//!
//! Must not: make entries durable by itself (the journal's flushes do, through the sink).

use std::sync::Arc;

use wasmtime::component::Linker;

use super::shape::{Attempt, Capability, StoreData};
use crate::contract::Contract;
use crate::journal::{DurableGrant, Journal};

/// The capability (see [`Capability`]).
pub(crate) struct Durable;

impl Capability for Durable {
    type Grant = DurableGrant;
    type State = Option<Journal>;

    fn state(_grant: Option<Arc<DurableGrant>>, attempt: &Attempt<'_>) -> Option<Journal> {
        // Made from the grant before every other capability's state (`store.rs`), so that
        // they share it.
        attempt.journal.cloned()
    }

    fn add_to_linker<T: StoreData>(
        _linker: &mut Linker<T>,
        _max: Contract,
        _get: fn(&mut T) -> &mut Option<Journal>,
    ) -> wasmtime::Result<()> {
        Ok(())
    }
}
