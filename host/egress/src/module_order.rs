//! Test of this crate's rule "modules import downward only": no folder of `src/` has an
//! import circle. The graph is read from the source text by the one checker the store,
//! this crate and the host share (`host/store/tests/it/module_graph.rs`, through
//! `#[path]`; its own tests on made-up crates are the store's `module_order.rs`).
//!
//! Must not: be compiled outside `cargo test`, or grow a second checker.

#[path = "../../store/tests/it/module_graph.rs"]
mod module_graph;

#[test]
fn no_folder_has_an_import_circle() {
    module_graph::assert_modules_in_order(env!("CARGO_MANIFEST_DIR"), 0);
}
