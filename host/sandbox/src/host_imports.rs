//! The host side of the task world: bindings generated from `wit/task.wit`, the
//! `sluice:task/host` interface (`log` into the attempt's capped log, `cancelled` from the
//! attempt's token), and the one function that fills a [`Linker`] with everything a task
//! may import (that interface plus the denied-by-default WASI of `wasi_ctx.rs`).
//!
//! Must not grant capabilities beyond the WIT contract. Host functions never trap on guest
//! input: logs past the cap are dropped, never an error. (wasmtime itself refuses a single
//! transfer above the host-call cap, `Limits::hostcall_bytes`, before this code runs.)

use wasmtime::component::{HasSelf, Linker};

use crate::store::HostState;

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "task",
    exports: { default: async },
});

use self::sluice::task::host::Level;

/// Adds every import a task may use to `linker`.
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_async(linker)?;
    Task::add_to_linker::<HostState, HasSelf<HostState>>(linker, |state| state)?;
    Ok(())
}

impl sluice::task::host::Host for HostState {
    fn log(&mut self, level: Level, message: String) {
        self.logs.line(level_name(level), &message);
    }

    fn cancelled(&mut self) -> bool {
        self.cancel.is_cancelled()
    }
}

fn level_name(level: Level) -> &'static str {
    match level {
        Level::Trace => "TRACE",
        Level::Debug => "DEBUG",
        Level::Info => "INFO",
        Level::Warn => "WARN",
        Level::Error => "ERROR",
    }
}
