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
//! Module map (each file says what it owns and must not do): `sandbox` (front door),
//! `config`, `engine` (Engine), `epoch_ticker` (ticks while attempts run), `guest_runtime`, `component` (cache,
//! `TaskComponent`), `validate`, `run_signature`, `disk_cache`, `host_imports` (bindgen +
//! `sluice:task/host` of each contract), `contract` (versions, found from imports),
//! `grants` (what an attempt may reach), `follow_ups` (`sluice:task/jobs`),
//! `secrets_import` (`sluice:task/secrets`), `mask` (revealed values hidden in the
//! report), `egress_hooks` (wasi:http through the one egress
//! connector), `http_error_code` (body-stream failures as their `error-code`), `wasi_ctx` (denied WASI,
//! capped pipe), `log_buffer`, `limiter`,
//! `store` (per-attempt policy), `run` (attempt + outcome mapping), `guest_result` (the
//! `run` call boundary, read without trusting the guest), `guest_text` (guest error
//! messages), `outcome`, `error`.
//!
//! Knows nothing about Postgres.

mod component;
mod config;
mod contract;
mod disk_cache;
mod egress_hooks;
mod engine;
mod epoch_ticker;
mod error;
mod follow_ups;
mod grants;
mod guest_result;
mod guest_runtime;
mod guest_text;
mod host_imports;
mod http_error_code;
mod limiter;
mod log_buffer;
mod mask;
mod outcome;
mod run;
mod run_signature;
mod sandbox;
mod secrets_import;
mod store;
mod validate;
mod wasi_ctx;

pub use component::{CacheStats, ComponentInfo, Origin, TaskComponent, sha256_hex};
pub use config::{EgressConfig, Limits, SandboxConfig};
pub use contract::{Contract, UnknownContract};
pub use egress_hooks::{HttpCall, HttpCalls, HttpGrant};
pub use error::{SandboxError, ValidationError};
pub use follow_ups::{CheckFuture, FollowUp, FollowUpCheck, FollowUpGrant, FollowUpRefusal};
pub use grants::{Grants, SecretGrant};
pub use outcome::{Failure, Outcome, RunReport};
pub use run::JobInput;
pub use sandbox::Sandbox;
pub use sluice_egress;
pub use tokio_util::sync::CancellationToken;
pub use validate::contract_of;
