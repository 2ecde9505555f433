//! The crate's tests, one module per area; `collector` is a loopback OTLP receiver the
//! exporter tests send to.
//!
//! Must not: reach the network beyond 127.0.0.1.

mod collector;
mod config;
mod context;
mod encode;
mod exporter;
mod sampler;

#[path = "../../../store/tests/it/module_graph.rs"]
mod module_graph;

/// The layers of the crate comment hold; no folder has an import circle.
#[test]
fn modules_import_downward_only() {
    module_graph::assert_modules_in_order(env!("CARGO_MANIFEST_DIR"), 7);
}
