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
    /// The layers of the crate comment hold; no folder has an import circle.
    #[test]
    fn modules_import_downward_only() {
        crate::module_graph::assert_modules_in_order(env!("CARGO_MANIFEST_DIR"), 2);
    }
}
