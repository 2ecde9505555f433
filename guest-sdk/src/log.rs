//! Structured logging to the attempt's log through the host's `log` import.
//!
//! Lines beyond the host's per-attempt cap are dropped, never an error. `println!` and
//! `eprintln!` also reach the attempt's log, but without a level.

use crate::bindings::sluice::task::host::{self, Level};

fn write(level: Level, message: impl AsRef<str>) {
    host::log(level, message.as_ref());
}

/// Log at `trace` level.
pub fn trace(message: impl AsRef<str>) {
    write(Level::Trace, message);
}

/// Log at `debug` level.
pub fn debug(message: impl AsRef<str>) {
    write(Level::Debug, message);
}

/// Log at `info` level.
pub fn info(message: impl AsRef<str>) {
    write(Level::Info, message);
}

/// Log at `warn` level.
pub fn warn(message: impl AsRef<str>) {
    write(Level::Warn, message);
}

/// Log at `error` level.
pub fn error(message: impl AsRef<str>) {
    write(Level::Error, message);
}
