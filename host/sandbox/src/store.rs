//! One attempt's `Store`: [`HostState`] (WASI context, resource table, limiter, log,
//! cancel token, deadline, and every capability's state in one [`Caps`]), [`new_store`],
//! the single place where per-attempt policy is applied — fuel, epoch deadline and its
//! callback, memory/table limiter, host-call caps, the attempt's grants — and
//! [`add_to_linker`], everything a task may import: the denied-by-default WASI of
//! `wasi_ctx.rs` and each capability.
//!
//! A store is never reused: one per attempt, dropped when the attempt ends. Must not run
//! guest code (that is `run.rs`) or serve a capability's calls (`capabilities/` does).

use std::fmt;
use std::time::Instant;

use sluice_egress::Connector;
use tokio_util::sync::CancellationToken;
use wasmtime::component::{Linker, ResourceTable};
use wasmtime::{Engine, Store, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtxView, WasiHttpView};

use crate::attempt_trace::AttemptTrace;
use crate::capabilities::{self, Attempt, Caps, Grants, HasCaps};
use crate::config::Limits;
use crate::contract::Contract;
use crate::journal::Journal;
use crate::limiter::{InstanceCaps, TaskLimiter};
use crate::log_buffer::LogBuffer;
use crate::suspend::RunShared;
use crate::wasi_ctx::denied_wasi_ctx;

/// Live component-model handles a guest may hold at once (wasmtime's default: 100 000).
const MAX_COMPONENT_HANDLES: usize = 10_000;

/// Why the epoch callback stopped the guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Interrupt {
    Timeout,
    Cancelled,
    /// A durable job's journal failed (the reason is the journal's).
    Journal,
}

/// The error the epoch callback raises to unwind the guest; `HostState::interrupted` says
/// which one it was, so outcome mapping never has to look at this error's text.
#[derive(Debug)]
pub(crate) struct Interrupted(pub Interrupt);

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Interrupt::Timeout => f.write_str("guest interrupted: deadline passed"),
            Interrupt::Cancelled => f.write_str("guest interrupted: cancelled"),
            Interrupt::Journal => f.write_str("guest interrupted: the journal failed"),
        }
    }
}

impl std::error::Error for Interrupted {}

/// Data of one attempt's store.
pub(crate) struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    /// Every capability's state (`capabilities/`).
    pub(crate) caps: Caps,
    pub(crate) limiter: TaskLimiter,
    pub(crate) logs: LogBuffer,
    cancel: CancellationToken,
    deadline: Option<Instant>,
    /// Set by the epoch callback when it stops the guest.
    pub(crate) interrupted: Option<Interrupt>,
    /// The run's suspension, if a capability suspended it.
    pub(crate) run: RunShared,
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for HostState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        self.caps.http.view(&mut self.table)
    }
}

impl HasCaps for HostState {
    fn caps(&mut self) -> &mut Caps {
        &mut self.caps
    }
}

/// Adds every import a task of a contract up to `max` may use to `linker`: WASI (denied
/// by default, `wasi_ctx.rs`) and each capability's.
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>, max: Contract) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_async(linker)?;
    capabilities::add_to_linker(linker, max)
}

/// What an attempt may reach beyond its own instance: the job type's grants, and the
/// host's connector (`None` unless HTTP is granted).
#[derive(Clone, Default)]
pub(crate) struct Reach {
    pub grants: Grants,
    pub connector: Option<Connector>,
}

/// A fresh store with every per-attempt limit applied. `deadline` is when the attempt's
/// timeout expires (`None`: no timeout).
pub(crate) fn new_store(
    engine: &Engine,
    limits: &Limits,
    instance_caps: InstanceCaps,
    cancel: CancellationToken,
    deadline: Option<Instant>,
    reach: Reach,
    trace: Option<AttemptTrace>,
) -> wasmtime::Result<Store<HostState>> {
    let logs = LogBuffer::new(limits.log_bytes);
    // A durable job's journal, shared by the WASI clocks and the journaled capabilities.
    let journal = reach.grants.durable.as_deref().map(Journal::new);
    let run = RunShared::default();
    let attempt = Attempt {
        logs: &logs,
        cancel: &cancel,
        deadline,
        connector: reach.connector.as_ref(),
        journal: journal.as_ref(),
        run: &run,
        trace: trace.as_ref(),
    };
    let caps = Caps::new(reach.grants, &attempt);
    let state = HostState {
        wasi: denied_wasi_ctx(&logs, journal.as_ref()),
        table: ResourceTable::new(),
        caps,
        limiter: TaskLimiter::new(limits.memory_bytes, limits.table_elements, instance_caps),
        logs,
        cancel,
        deadline,
        interrupted: None,
        run,
    };
    let mut store = Store::new(engine, state);
    store.limiter(|state| &mut state.limiter);
    store.set_fuel(limits.store_fuel())?;
    store.set_hostcall_fuel(limits.hostcall_bytes());
    store.set_max_component_handles(MAX_COMPONENT_HANDLES);
    // Wake up every tick: check cancellation and the deadline, then yield to the guest
    // runtime so other guests on the same worker thread make progress.
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(|mut cx| on_epoch_tick(cx.data_mut()));
    Ok(store)
}

fn on_epoch_tick(state: &mut HostState) -> wasmtime::Result<UpdateDeadline> {
    if state
        .caps
        .durable
        .journal
        .as_ref()
        .is_some_and(Journal::failed)
    {
        // Diverged, over its cap or unable to journal: `run.rs` reads why from the journal.
        return Err(wasmtime::Error::new(Interrupted(Interrupt::Journal)));
    }
    let why = if state.cancel.is_cancelled() {
        Interrupt::Cancelled
    } else if state.deadline.is_some_and(|d| Instant::now() >= d) {
        Interrupt::Timeout
    } else {
        return Ok(UpdateDeadline::Yield(1));
    };
    state.interrupted = Some(why);
    Err(wasmtime::Error::new(Interrupted(why)))
}
