//! `sluice-wire`: the JSON that Sluice prints: one view type per thing a surface shows (jobs and their
//! attempts, components, job types, schedules, tenants and tokens, workers, statistics,
//! secrets, signals, webhook endpoints, deliveries and events, metered usage, and a local
//! run), each built `From`
//! the store's row (a local run's from the fields the CLI fills in).
//! The HTTP API answers with these and the CLI's `--json` prints these, so `sluice X show
//! ID --json` and `GET /v1/X/{id}` are the same object (`tests/e2e/cli/json_parity.rs`).
//! The views derive `utoipa::ToSchema`: the OpenAPI document describes exactly what is
//! sent.
//!
//! Owns: the shapes, their conversions, the labels ids are shown with (`ep_N`, `evt_N`,
//! `sluice:task@0.N.0`) and the OpenAPI vocabularies ([`schemas`]). Must not: depend on
//! the HTTP API, the CLI, the dashboard or the worker (only `sluice_store`, serde,
//! utoipa, chrono and `sluice_shared`'s units and labels), or read or write anything; the store's rows
//! do not derive `Serialize`, so nothing reaches a surface without a view.

#![warn(missing_docs)]

pub mod components;
pub mod job_types;
pub mod jobs;
pub mod journal;
pub mod local_run;
pub mod schedules;
pub mod schemas;
pub mod secrets;
pub mod signals;
pub mod stats;
pub mod tenants;
pub mod usage;
pub mod webhooks;
pub mod workers;

pub use components::{ComponentDetail, ComponentView, PushedComponent, contract_label};
pub use job_types::JobTypeView;
pub use jobs::{
    AttemptLogView, AttemptView, BatchItem, BatchResponse, BulkEnqueued, JobListItem, JobLogs,
    JobPage, JobView,
};
pub use journal::{JournalEntryView, JournalView};
pub use local_run::{FollowUpView, LocalRunView};
pub use schedules::ScheduleView;
pub use secrets::{RotateKeyView, RotatedKindView, SecretView};
pub use signals::SignalSent;
pub use stats::{HeldView, StateCountsView, StatsView, TypeStatsView};
pub use tenants::{NewTokenView, TenantView, TokenView};
pub use usage::{UsageRowView, UsageView, UsageWindow};
pub use webhooks::{
    DeliveryView, EndpointView, EventAccepted, Redelivered, TestSent, endpoint_label, event_label,
};
pub use workers::WorkerView;

#[cfg(test)]
#[path = "../../store/tests/it/module_graph.rs"]
mod module_graph;

#[cfg(test)]
mod tests {
    /// The views import each other in no circle (the crate's walls keep the rest out:
    /// it depends on the store and `sluice-shared` only).
    #[test]
    fn modules_import_downward_only() {
        crate::module_graph::assert_modules_in_order(env!("CARGO_MANIFEST_DIR"), 0);
    }
}
