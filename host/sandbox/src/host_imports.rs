//! The host side of the task worlds: bindings generated from `wit/task.wit`
//! (`sluice:task@0.1.0`) and `wit/v0.2/` (`sluice:task@0.2.0`), the `sluice:task/host`
//! interface of both (`log` into the attempt's capped log, `cancelled` from the attempt's
//! token), and the one function that fills a [`Linker`] with everything a task of each
//! contract the host runs may import: that interface, the denied-by-default WASI of
//! `wasi_ctx.rs`, and from 0.2 `wasi:http` (sent through `egress_hooks.rs`) and
//! `sluice:task/secrets` (`secrets_import.rs`), with `http-error-code` answered by
//! `http_error_code.rs`.
//!
//! Must not grant capabilities beyond the WIT contracts. Host functions never trap on
//! guest input: logs past the cap are dropped, never an error. (wasmtime itself refuses a
//! single transfer above the host-call cap, `Limits::hostcall_bytes`, before this code
//! runs.) The `bindgen!` calls here leave tracing off: a traced import would log what the
//! guest passed, secrets included (the binary's log filter drops this module's TRACE and
//! DEBUG events as well, `sluice::logging`).

use wasmtime::component::{HasSelf, Linker};

use crate::contract::Contract;
use crate::store::HostState;

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "task",
    exports: { default: async },
});

/// `sluice:task@0.2.0`. Only its imports are linked from here: its world's `run` export
/// has exactly 0.1's type, so one [`TaskPre`] checks and calls both.
pub(crate) mod v0_2 {
    wasmtime::component::bindgen!({
        path: "../../wit/v0.2",
        world: "task",
        require_store_data_send: true,
        // The host's check of a follow-up job may read the database (follow_ups.rs).
        imports: { "sluice:task/jobs.enqueue": async | trappable },
        with: {
            "wasi:http": wasmtime_wasi_http::p2::bindings::http,
            "wasi:io": wasmtime_wasi::p2::bindings::io,
        },
    });
}

/// Adds every import a task of a contract up to `max` may use to `linker`.
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>, max: Contract) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_async(linker)?;
    Task::add_to_linker::<HostState, HasSelf<HostState>>(linker, |state| state)?;
    if max >= Contract::V0_2 {
        v0_2::sluice::task::host::add_to_linker::<HostState, HasSelf<HostState>>(
            linker,
            |state| state,
        )?;
        v0_2::sluice::task::jobs::add_to_linker::<HostState, HasSelf<HostState>>(
            linker,
            |state| state,
        )?;
        v0_2::sluice::task::secrets::add_to_linker::<HostState, HasSelf<HostState>>(
            linker,
            |state| state,
        )?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)?;
        // Body-stream failures as their error code (wasmtime's own answers none of ours).
        crate::http_error_code::link(linker)?;
    }
    Ok(())
}

impl sluice::task::host::Host for HostState {
    fn log(&mut self, level: sluice::task::host::Level, message: String) {
        use sluice::task::host::Level;
        let name = match level {
            Level::Trace => "TRACE",
            Level::Debug => "DEBUG",
            Level::Info => "INFO",
            Level::Warn => "WARN",
            Level::Error => "ERROR",
        };
        self.logs.line(name, &message);
    }

    fn cancelled(&mut self) -> bool {
        self.cancel.is_cancelled()
    }
}

impl v0_2::sluice::task::host::Host for HostState {
    fn log(&mut self, level: v0_2::sluice::task::host::Level, message: String) {
        use v0_2::sluice::task::host::Level;
        let name = match level {
            Level::Trace => "TRACE",
            Level::Debug => "DEBUG",
            Level::Info => "INFO",
            Level::Warn => "WARN",
            Level::Error => "ERROR",
        };
        self.logs.line(name, &message);
    }

    fn cancelled(&mut self) -> bool {
        self.cancel.is_cancelled()
    }
}
