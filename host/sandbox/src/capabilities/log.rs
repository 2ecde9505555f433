//! `sluice:task/host` of every contract: `log` into the attempt's capped log, `cancelled`
//! from the attempt's token. Every attempt has it (no grant).
//!
//! Must not trap on guest input: lines past the log cap are dropped, never an error.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use wasmtime::component::{HasSelf, Linker};

use super::shape::{Attempt, Capability, StoreData};
use crate::contract::Contract;
use crate::host_imports::{
    sluice::task::host as v0_1, v0_2::sluice::task::host as v0_2, v0_3::sluice::task::host as v0_3,
};
use crate::log_buffer::LogBuffer;

/// The capability (see [`Capability`]).
pub(crate) struct Log;

/// One attempt's log and cancel token, as the guest reaches them.
pub(crate) struct LogState {
    logs: LogBuffer,
    cancel: CancellationToken,
}

impl Capability for Log {
    type Grant = ();
    type State = LogState;

    fn state(_: Option<Arc<()>>, attempt: &Attempt<'_>) -> LogState {
        LogState {
            logs: attempt.logs.clone(),
            cancel: attempt.cancel.clone(),
        }
    }

    fn add_to_linker<T: StoreData>(
        linker: &mut Linker<T>,
        max: Contract,
        get: fn(&mut T) -> &mut LogState,
    ) -> wasmtime::Result<()> {
        v0_1::add_to_linker::<T, HasSelf<LogState>>(linker, get)?;
        if max >= Contract::V0_2 {
            v0_2::add_to_linker::<T, HasSelf<LogState>>(linker, get)?;
        }
        if max >= Contract::V0_3 {
            v0_3::add_to_linker::<T, HasSelf<LogState>>(linker, get)?;
        }
        Ok(())
    }
}

/// The same `Host` impl for each contract's `host` interface (identical WIT, one
/// generated module per version).
macro_rules! host_impl {
    ($($version:ident),*) => {$(
        impl $version::Host for LogState {
            fn log(&mut self, level: $version::Level, message: String) {
                let name = match level {
                    $version::Level::Trace => "TRACE",
                    $version::Level::Debug => "DEBUG",
                    $version::Level::Info => "INFO",
                    $version::Level::Warn => "WARN",
                    $version::Level::Error => "ERROR",
                };
                self.logs.line(name, &message);
            }

            fn cancelled(&mut self) -> bool {
                self.cancel.is_cancelled()
            }
        }
    )*};
}

host_impl!(v0_1, v0_2, v0_3);
