//! `sluice-sandbox`: the only part of Sluice that touches wasmtime. It validates task
//! components, compiles each at most once per host (memory and disk caches), and runs one
//! attempt of a job in a fresh, limited instance with no ambient authority.
//!
//! ```text
//! Sandbox::new(SandboxConfig)          one Engine, linker, guest runtime, epoch ticker
//!   .validate(bytes, max) -> ComponentInfo | ValidationError      (upload time)
//!   .prepare(sha256, bytes) -> TaskComponent | SandboxError       (compile once)
//!   .run(&component, JobInput, &Limits, CancellationToken).await -> RunReport
//! ```
//!
//! Module map (each file says what it owns and must not do), from the bottom up: a
//! module imports only modules of the lines above it (`module_order.rs` tests that the
//! graph has no circle).
//! 1. leaves: `attempt_trace` (the trace an attempt continues), `contract` (versions,
//!    found from imports), `log_buffer`, `mask` (revealed
//!    values hidden in the report), `guest_text` (guest error messages), `limiter`,
//!    `host_imports` (bindgen of each contract), `disk_cache`, `epoch_ticker` (ticks
//!    while attempts run), `guest_runtime`;
//! 2. `config`, `engine` (Engine), `journal` (a durable job's journal of host calls:
//!    replay, record, flush through the host's sink; its clocks and generators; the
//!    instants and questions of its waits), `suspend` (a run's suspension),
//!    `wasi_ctx` (denied WASI, capped pipe);
//! 3. `capabilities` (what an attempt may reach: `log`, `http`, `jobs`, `secrets`,
//!    `durable`, `flow`, each
//!    with its grant, state, linker setup and `Host` impls; [`Grants`]);
//! 4. `outcome` (the report), `error`, `run_signature`, `guest_result` (the `run` call
//!    boundary, read without trusting the guest);
//! 5. `store` (`HostState`, per-attempt policy, the linker), `validate`, `component`
//!    (cache, `TaskComponent`), `run` (attempt + outcome mapping), `sandbox` (front door).
//!
//! Test-only: `wit_versions` reads `wit/` and tests its versioning rule against
//! `contract`'s tables.
//!
//! Knows nothing about Postgres.

#![warn(missing_docs)]

mod attempt_trace;
mod capabilities;
mod component;
mod config;
mod contract;
mod disk_cache;
mod engine;
mod epoch_ticker;
mod error;
mod guest_result;
mod guest_runtime;
mod guest_text;
mod host_imports;
mod journal;
mod limiter;
mod log_buffer;
mod mask;
#[cfg(test)]
mod module_order;
mod outcome;
mod run;
mod run_signature;
mod sandbox;
mod store;
mod suspend;
mod validate;
mod wasi_ctx;
#[cfg(test)]
mod wit_versions;

pub use attempt_trace::AttemptTrace;
pub use capabilities::Grants;
pub use capabilities::http::{HttpCall, HttpCalls, HttpGrant, RecordedHttp, RecordedResponse};
pub use capabilities::jobs::{
    CheckFuture, FollowUp, FollowUpCheck, FollowUpGrant, FollowUpRefusal, ReserveFuture,
};
pub use capabilities::secrets::SecretGrant;
pub use component::{CacheStats, ComponentInfo, Origin, TaskComponent, sha256_hex};
pub use config::{EgressConfig, Limits, SandboxConfig};
pub use contract::{Contract, UnknownContract};
pub use error::{SandboxError, ValidationError};
pub use journal::{
    ChildOutcome, ChildState, DurableGrant, JournalCounts, JournalEntry, JournalError, JournalSink,
    PersistFuture, WaitFuture,
};
pub use outcome::{Failure, Outcome, RunReport};
pub use run::JobInput;
pub use sandbox::Sandbox;
pub use suspend::Suspension;
pub use tokio_util::sync::CancellationToken;
pub use validate::contract_of;
