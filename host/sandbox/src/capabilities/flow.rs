//! `sluice:task/flow@0.3.0` (issue #38): `snooze(delay-ms)`, "run me again later"
//! without spending an attempt. Every 0.3 attempt has it (no grant). The run suspends
//! ([`RunShared::suspend`]); the host puts the job back to `pending` after the delay and
//! counts the snooze against the type's `--max-snoozes`.
//!
//! In a durable type the call is journaled before the run suspends, so the next run
//! replays it and it returns; in one that is not, it never returns and the next run
//! starts `run` over. Must not: decide when the job runs again (the host's statement
//! does) or count snoozes (the database does).

use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::{HasSelf, Linker};

use super::shape::{Attempt, Capability, StoreData};
use crate::contract::Contract;
use crate::host_imports::v0_3::sluice::task::flow as v0_3;
use crate::journal::{Journal, Step};
use crate::suspend::{RunShared, Suspension};

/// The capability (see [`Capability`]).
pub(crate) struct Flow;

/// One attempt's journal (`None`: not durable) and its run.
pub(crate) struct FlowState {
    journal: Option<Journal>,
    run: RunShared,
}

impl Capability for Flow {
    type Grant = ();
    type State = FlowState;

    fn state(_: Option<Arc<()>>, attempt: &Attempt<'_>) -> FlowState {
        FlowState {
            journal: attempt.journal.cloned(),
            run: attempt.run.clone(),
        }
    }

    fn add_to_linker<T: StoreData>(
        linker: &mut Linker<T>,
        max: Contract,
        get: fn(&mut T) -> &mut FlowState,
    ) -> wasmtime::Result<()> {
        if max >= Contract::V0_3 {
            v0_3::add_to_linker::<T, HasSelf<FlowState>>(linker, get)?;
        }
        Ok(())
    }
}

impl v0_3::Host for FlowState {
    async fn snooze(&mut self, delay_ms: u64) -> wasmtime::Result<()> {
        let why = Suspension::Snooze {
            delay: Duration::from_millis(delay_ms),
        };
        let Some(journal) = self.journal.clone() else {
            return Err(self.run.suspend(why));
        };
        let request = format!("{delay_ms}ms");
        match journal.step("snooze", &request) {
            Step::Replay(_) => Ok(()),
            Step::Diverged => Err(wasmtime::Error::msg("the journal stopped the attempt")),
            Step::Live(seq) => {
                journal.record(seq, "snooze", request, "snoozed".to_owned(), Vec::new());
                match journal.flush(None).await {
                    Ok(()) => Err(self.run.suspend(why)),
                    Err(_) => Err(wasmtime::Error::msg("the journal stopped the attempt")),
                }
            }
        }
    }
}
