//! Structured logging to the attempt's log through the host's `log` import
//! (`sluice:task/host@0.2.0`; a contract 0.3 task uses [`crate::v0_3::log`]).
//!
//! Lines beyond the host's per-attempt cap are dropped, never an error. `println!` and
//! `eprintln!` also reach the attempt's log, but without a level.

log_functions!(bindings::sluice::task::host);
