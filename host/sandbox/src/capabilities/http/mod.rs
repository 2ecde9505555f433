//! `wasi:http/outgoing-handler` (contract 0.2): wasmtime-wasi-http's implementation,
//! whose every request goes through [`EgressHooks`] (`hooks.rs`) to the host's one
//! connector, and whose body-stream failures reach the guest as their `error-code`
//! (`error_code.rs`). Denied without a grant: the hooks refuse every request. A grant
//! with recorded responses (`sluice test`) is answered from them (`recorded.rs`) and
//! nothing is sent.
//!
//! Must not open a socket (only the connector does) or link `wasi:http` below 0.2.

mod calls;
mod error_code;
mod hooks;
mod journaled;
mod recorded;
mod trace;

use std::sync::Arc;

use wasmtime::component::{Linker, ResourceTable};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView};

use super::shape::{Attempt, Capability, StoreData};
use crate::contract::Contract;
pub use calls::{HttpCall, HttpCalls, HttpGrant, RecordedHttp, RecordedResponse};
use hooks::EgressHooks;

/// The capability (see [`Capability`]).
pub(crate) struct Http;

/// One attempt's wasi:http context and hooks.
pub(crate) struct HttpState {
    ctx: WasiHttpCtx,
    hooks: EgressHooks,
}

impl HttpState {
    /// wasi:http's view of the attempt, over the store's resource table.
    pub(crate) fn view<'a>(&'a mut self, table: &'a mut ResourceTable) -> WasiHttpCtxView<'a> {
        WasiHttpCtxView {
            ctx: &mut self.ctx,
            table,
            hooks: &mut self.hooks,
        }
    }

    /// What the attempt's requests did (read once the guest has returned).
    pub(crate) fn calls(&self) -> HttpCalls {
        self.hooks.calls()
    }
}

impl Capability for Http {
    type Grant = HttpGrant;
    type State = HttpState;

    fn state(grant: Option<Arc<HttpGrant>>, attempt: &Attempt<'_>) -> HttpState {
        HttpState {
            ctx: WasiHttpCtx::new(),
            hooks: EgressHooks::new(
                attempt.connector.cloned(),
                grant,
                attempt.deadline,
                attempt.logs.clone(),
                attempt.journal.cloned(),
                attempt.trace.cloned(),
            ),
        }
    }

    /// wasi:http reaches the state through the store data's `WasiHttpView` (which calls
    /// [`HttpState::view`]), not through `get`: its bindings are wasmtime-wasi-http's.
    fn add_to_linker<T: StoreData>(
        linker: &mut Linker<T>,
        max: Contract,
        _get: fn(&mut T) -> &mut HttpState,
    ) -> wasmtime::Result<()> {
        if max >= Contract::V0_2 {
            wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)?;
            // Body-stream failures as their error code (wasmtime's own answers none of ours).
            error_code::link(linker)?;
        }
        Ok(())
    }
}
