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
//! 2. `host`, `signals`, `autogroup`, `logging`: what a running process is made of

pub mod autogroup;
pub mod bench;
pub mod cli;
pub mod host;
pub mod logging;
pub mod signals;

#[cfg(test)]
#[path = "../store/tests/it/module_graph.rs"]
mod module_graph;

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::module_graph::{ModuleGraph, Sources, folders, read_sources};

    fn sources() -> Sources {
        read_sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
    }

    /// The layers of the crate comment hold.
    #[test]
    fn modules_import_downward_only() {
        let graph = ModuleGraph::of_folder(&sources(), "");
        assert_eq!(graph.layers.len(), 2, "lib.rs declares its layers");
        assert_eq!(graph.problems(), Vec::<String>::new());
    }

    #[test]
    fn no_folder_has_an_import_circle() {
        let sources = sources();
        for folder in folders(&sources).iter().filter(|f| !f.is_empty()) {
            let problems = ModuleGraph::of_folder(&sources, folder).problems();
            assert_eq!(problems, Vec::<String>::new(), "in {folder}/");
        }
    }
}
