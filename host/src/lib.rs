//! The `sluice` binary's library: the command line (`cli`), `Host::run` (`host`: the
//! worker, its background services and the metrics listener in one process), signals,
//! logging and the benchmarks. It composes the crates that do the work and holds none of
//! their parts: the worker is `sluice-worker`, the HTTP API and dashboard `sluice-http`,
//! the JSON both print `sluice-wire`, what they share `sluice-shared`; SQL lives in
//! `sluice-store`, wasmtime in `sluice-sandbox`.
//!
//! Modules import downward only, through these layers, top first (a module imports from
//! its own layer and those below, never in a circle; `tests` below checks):
//! 1. `cli`, `bench`: the commands and the benchmarks
//! 2. `host`, `signals`, `autogroup`, `logging`, `traces`: what a running process is made
//!    of

pub mod autogroup;
pub mod bench;
pub mod cli;
pub mod host;
pub mod logging;
pub mod signals;
pub mod traces;

#[cfg(test)]
#[path = "../store/tests/it/module_graph.rs"]
mod module_graph;

#[cfg(test)]
mod tests {
    /// The layers of the crate comment hold; no folder has an import circle.
    #[test]
    fn modules_import_downward_only() {
        crate::module_graph::assert_modules_in_order(env!("CARGO_MANIFEST_DIR"), 2);
    }
}
