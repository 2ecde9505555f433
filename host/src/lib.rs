//! The Sluice host: the worker that joins the store and the sandbox, the HTTP API and
//! dashboard, and the `sluice` command line. SQL lives in `sluice-store`, wasmtime in
//! `sluice-sandbox`; this crate holds neither.
//!
//! Its modules import downward only, through these layers, top first: the crates they
//! are to become (issue #37). A module imports from its own layer and those below, never
//! in a circle, and the web layer nothing of the worker's (`tests` below checks):
//! 1. `cli`, `bench`, `host`, `signals`, `autogroup`, `logging`: the binary, which
//!    composes the rest
//! 2. `serve`, `http`, `ui`, `app_state`: the HTTP API and the dashboard
//! 3. `worker`, `services`: the claim loop and the background services
//! 4. `metrics`, `grants`, `secrets`, `webhooks`, `units`, `registration`, `wire` (the JSON
//!    the CLI and the API print): what they share

pub mod app_state;
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
pub mod serve;
pub mod services;
pub mod signals;
pub mod ui;
pub mod units;
pub mod webhooks;
pub mod wire;
pub mod worker;

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

    /// The layers of the crate comment hold, and the web layer imports nothing of the
    /// worker's.
    #[test]
    fn top_level_modules_import_downward_only() {
        let graph = ModuleGraph::of_folder(&sources(), "");
        assert_eq!(graph.layers.len(), 4, "lib.rs declares its layers");
        assert_eq!(graph.problems(), Vec::<String>::new());
        let (web, worker) = (&graph.layers[1], &graph.layers[2]);
        let across: Vec<_> = graph
            .edges
            .iter()
            .filter(|((from, to), _)| web.contains(from) && worker.contains(to))
            .collect();
        assert!(
            across.is_empty(),
            "the web layer imports the worker's: {across:?}"
        );
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
