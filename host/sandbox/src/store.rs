//! One attempt's `Store`: [`HostState`] (WASI and wasi:http contexts, resource table,
//! limiter, log, cancel token, deadline, egress hooks, secret grant and
//! the values it revealed) and [`new_store`], the single place
//! where per-attempt policy is applied — fuel, epoch deadline and its callback,
//! memory/table limiter, host-call caps, the attempt's HTTP and secret grants.
//!
//! A store is never reused: one per attempt, dropped when the attempt ends. Must not run
//! guest code (that is `run.rs`).

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use sluice_egress::Connector;
use tokio_util::sync::CancellationToken;
use wasmtime::component::ResourceTable;
use wasmtime::{Engine, Store, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::config::Limits;
use crate::egress_hooks::{EgressHooks, HttpGrant};
use crate::follow_ups::{FollowUpBuffer, FollowUpGrant};
use crate::grants::SecretGrant;
use crate::limiter::{InstanceCaps, TaskLimiter};
use crate::log_buffer::LogBuffer;
use crate::wasi_ctx::denied_wasi_ctx;

/// Live component-model handles a guest may hold at once (wasmtime's default: 100 000).
const MAX_COMPONENT_HANDLES: usize = 10_000;

/// Why the epoch callback stopped the guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Interrupt {
    Timeout,
    Cancelled,
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
        }
    }
}

impl std::error::Error for Interrupted {}

/// Data of one attempt's store.
pub(crate) struct HostState {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    pub(crate) egress: EgressHooks,
    table: ResourceTable,
    pub(crate) limiter: TaskLimiter,
    pub(crate) logs: LogBuffer,
    /// The follow-up jobs the guest has asked for (kept only if it completes).
    pub(crate) follow_ups: FollowUpBuffer,
    pub(crate) cancel: CancellationToken,
    deadline: Option<Instant>,
    /// Set by the epoch callback when it stops the guest.
    pub(crate) interrupted: Option<Interrupt>,
    /// The type's secret grant (`None`: nothing granted).
    pub(crate) secrets: Option<Arc<SecretGrant>>,
    /// (name, value) of every secret `secrets.get` returned: masked in the report.
    pub(crate) revealed: Vec<(String, String)>,
    /// Granted names already logged as not set (one line per name).
    pub(crate) warned_unset: Vec<String>,
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
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.egress,
        }
    }
}

/// What an attempt may reach beyond its own instance: the host's connector (`None`: the
/// host has no egress), the job type's HTTP grant and its secrets (`None`: nothing).
#[derive(Clone, Default)]
pub(crate) struct Reach {
    pub connector: Option<Connector>,
    pub http: Option<Arc<HttpGrant>>,
    /// What the attempt may enqueue (`None`: no follow-up jobs).
    pub follow_ups: Option<Arc<FollowUpGrant>>,
    pub secrets: Option<Arc<SecretGrant>>,
}

/// A fresh store with every per-attempt limit applied. `deadline` is when the attempt's
/// timeout expires (`None`: no timeout).
pub(crate) fn new_store(
    engine: &Engine,
    limits: &Limits,
    caps: InstanceCaps,
    cancel: CancellationToken,
    deadline: Option<Instant>,
    reach: Reach,
) -> wasmtime::Result<Store<HostState>> {
    let logs = LogBuffer::new(limits.log_bytes);
    let state = HostState {
        wasi: denied_wasi_ctx(&logs),
        http: WasiHttpCtx::new(),
        egress: EgressHooks::new(reach.connector, reach.http, deadline, logs.clone()),
        table: ResourceTable::new(),
        limiter: TaskLimiter::new(limits.memory_bytes, limits.table_elements, caps),
        logs,
        follow_ups: FollowUpBuffer::new(reach.follow_ups),
        cancel,
        deadline,
        interrupted: None,
        secrets: reach.secrets,
        revealed: Vec::new(),
        warned_unset: Vec::new(),
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
