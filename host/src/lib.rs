//! The Sluice host: the worker that joins the store and the sandbox, and the `sluice`
//! command line. SQL lives in `sluice-store`, wasmtime in `sluice-sandbox`; this crate
//! holds neither.

pub mod autogroup;
pub mod bench;
pub mod cli;
pub mod grants;
pub mod host;
pub mod http;
pub mod logging;
pub mod metrics;
pub mod registration;
pub mod secrets;
pub mod services;
pub mod signals;
pub mod ui;
pub mod units;
pub mod webhooks;
pub mod wire;
pub mod worker;
