//! Test of this crate's rule "modules import downward only": no folder of `src/` has an
//! import circle. The graph is read from the source text by the one checker the store,
//! this crate and the host share (`host/store/tests/it/module_graph.rs`, through
//! `#[path]`; its own tests on made-up crates are the store's `module_order.rs`).
//!
//! Must not: be compiled outside `cargo test`, or grow a second checker.

#[path = "../../store/tests/it/module_graph.rs"]
#[allow(dead_code)]
mod module_graph;

use std::path::Path;

use module_graph::{ModuleGraph, folders, read_sources};

#[test]
fn no_folder_has_an_import_circle() {
    let sources = read_sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(sources.len() > 3, "found the modules: {:?}", sources.keys());
    for folder in folders(&sources) {
        let problems = ModuleGraph::of_folder(&sources, &folder).problems();
        assert_eq!(problems, Vec::<String>::new(), "in src/{folder}");
    }
}
