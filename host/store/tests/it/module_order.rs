//! The store's modules import downward only: the layers `src/lib.rs` declares hold, and
//! no folder has an import circle (`module_graph` reads the sources).
//!
//! Owns: that check, which needs no database. Must not: run SQL.

use std::path::Path;

use crate::module_graph::{ModuleGraph, folders, read_sources};

#[test]
fn the_stores_modules_import_downward_only() {
    let sources = read_sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let root = ModuleGraph::of_folder(&sources, "");
    assert_eq!(root.layers.len(), 2, "lib.rs declares its layers");
    for folder in folders(&sources) {
        let problems = ModuleGraph::of_folder(&sources, &folder).problems();
        assert_eq!(problems, Vec::<String>::new(), "in src/{folder}");
    }
}
