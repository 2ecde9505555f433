//! `sluice-shared`: what the worker (`sluice-worker`), the HTTP API and dashboard
//! (`sluice-http`) and the CLI all use — the process's metrics, job-type grants, the
//! secrets key, webhook endpoints and their delivery, duration and size units, and the
//! registration of a process in the fleet.
//!
//! Must not: depend on a web framework, a CLI parser or the worker (`cargo tree -p
//! sluice-shared` shows no axum, maud, utoipa or clap), or speak SQL (the store does).
//!
//! Modules import downward only, through these layers, top first (a module imports from
//! its own layer and those below, never in a circle; `tests` below checks):
//! 1. `webhooks`, `grants`: webhook endpoints and delivery, job-type grants
//! 2. `metrics`, `secrets`, `registration`, `units`: what those build on

#![warn(missing_docs)]

pub mod grants;
pub mod metrics;
pub mod registration;
pub mod secrets;
pub mod units;
pub mod webhooks;

#[cfg(test)]
#[path = "../../store/tests/it/module_graph.rs"]
mod module_graph;

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::module_graph::{ModuleGraph, Sources, folders, read_sources};

    fn sources() -> Sources {
        read_sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
    }

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
