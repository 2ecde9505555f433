//! The JSON that Sluice prints: one view type per thing a surface shows (jobs and their
//! attempts, components, job types, schedules, tenants and tokens, workers, statistics,
//! secrets, webhook endpoints, deliveries and events), each built `From` the store's row.
//! The HTTP API answers with these and the CLI's `--json` prints these, so `sluice X show
//! ID --json` and `GET /v1/X/{id}` are the same object (`tests/e2e_cli/json_parity.rs`).
//! The views derive `utoipa::ToSchema`: the OpenAPI document describes exactly what is
//! sent.
//!
//! Owns: the shapes, their conversions, the labels ids are shown with (`ep_N`, `evt_N`,
//! `sluice:task@0.N.0`) and the OpenAPI vocabularies ([`schemas`]). Must not: import
//! `crate::http`, `crate::cli`, `crate::ui` or `crate::worker` (only `sluice_store`,
//! serde, utoipa, chrono and `crate::units`), or read or write anything; the store's rows
//! do not derive `Serialize`, so nothing reaches a surface without a view.

pub mod components;
pub mod job_types;
pub mod jobs;
pub mod schedules;
pub mod schemas;
pub mod secrets;
pub mod stats;
pub mod tenants;
pub mod webhooks;
pub mod workers;

pub use components::{ComponentDetail, ComponentView, PushedComponent, contract_label};
pub use job_types::JobTypeView;
pub use jobs::{
    AttemptLogView, AttemptView, BatchItem, BatchResponse, BulkEnqueued, JobListItem, JobLogs,
    JobPage, JobView,
};
pub use schedules::ScheduleView;
pub use secrets::{RotateKeyView, RotatedKindView, SecretView};
pub use stats::{StateCountsView, StatsView, TypeStatsView};
pub use tenants::{NewTokenView, TenantView, TokenView};
pub use webhooks::{
    DeliveryView, EndpointView, EventAccepted, Redelivered, TestSent, endpoint_label, event_label,
};
pub use workers::WorkerView;

#[cfg(test)]
mod tests {
    /// Every file of this module, by name.
    const SOURCES: [(&str, &str); 11] = [
        ("mod.rs", include_str!("mod.rs")),
        ("components.rs", include_str!("components.rs")),
        ("job_types.rs", include_str!("job_types.rs")),
        ("jobs.rs", include_str!("jobs.rs")),
        ("schedules.rs", include_str!("schedules.rs")),
        ("schemas.rs", include_str!("schemas.rs")),
        ("secrets.rs", include_str!("secrets.rs")),
        ("stats.rs", include_str!("stats.rs")),
        ("tenants.rs", include_str!("tenants.rs")),
        ("webhooks.rs", include_str!("webhooks.rs")),
        ("workers.rs", include_str!("workers.rs")),
    ];

    /// The wire layer will move into a crate of its own, beside the store: it may use
    /// `crate::units` and itself, nothing else of this crate.
    #[test]
    fn the_wire_layer_uses_nothing_of_the_crate_but_units() {
        let listed = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/src/wire"))
            .unwrap()
            .count();
        assert_eq!(
            listed,
            SOURCES.len(),
            "a file of src/wire/ is not listed here"
        );
        // Written in two pieces so that this test does not find itself.
        let needle = ["crate", "::"].concat();
        for (file, text) in SOURCES {
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                for (at, _) in code.match_indices(needle.as_str()) {
                    let path = &code[at + needle.len()..];
                    assert!(
                        path.starts_with("units") || path.starts_with("wire"),
                        "src/wire/{file}:{}: {line}",
                        n + 1
                    );
                }
            }
        }
    }
}
