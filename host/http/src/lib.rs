//! `sluice-http`: what `sluice serve` serves — the HTTP API (`api`), the dashboard under
//! `/ui` (`ui`), `GET /metrics` (`scrape`) — and the connection loop (`serve`).
//!
//! Owns: routes, request parsing, authentication, sessions, pages and the OpenAPI
//! document. Must not: run jobs (it does not depend on `sluice-worker`), speak SQL (every
//! read and write is a `sluice_store::Store` call) or touch wasmtime beyond validating an
//! upload through `sluice_sandbox::Sandbox`. The JSON it answers is `sluice_wire`'s.
//!
//! Modules import downward only, through these layers, top first (a module imports from
//! its own layer and those below, never in a circle; `tests` below checks):
//! 1. `serve`: the API, the dashboard and the metrics endpoint in one app, and the server
//! 2. `api`, `ui`: the HTTP API and the dashboard, which import neither each other
//! 3. `app_state`, `scrape`: the state both share, and the metrics endpoint

#![warn(missing_docs)]

pub mod api;
pub mod app_state;
pub mod scrape;
pub mod serve;
pub mod ui;

#[cfg(test)]
#[path = "../../store/tests/it/module_graph.rs"]
mod module_graph;

#[cfg(test)]
mod tests {
    /// The layers of the crate comment hold, no folder has an import circle, and the API
    /// and the dashboard import neither each other.
    #[test]
    fn modules_import_downward_only() {
        let graph = crate::module_graph::assert_modules_in_order(env!("CARGO_MANIFEST_DIR"), 3);
        let across: Vec<_> = graph
            .edges
            .keys()
            .filter(|(from, to)| (from == "api" && to == "ui") || (from == "ui" && to == "api"))
            .collect();
        assert!(
            across.is_empty(),
            "the API and the dashboard import each other: {across:?}"
        );
    }
}
