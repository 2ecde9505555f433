//! How components look in JSON: a stored component without its bytes
//! ([`ComponentView`]: `GET /v1/components`, `sluice component list --json`), one with the
//! job types that run it ([`ComponentDetail`]: `GET /v1/components/{name}`, `sluice
//! component show --json`), and what `sluice component push --json` prints
//! ([`PushedComponent`]). The contract is shown as the WIT package it names
//! (`sluice:task@0.2.0`), never as the stored minor number.
//!
//! Owns: these shapes and their conversions from `sluice_store::ComponentRecord`. Must
//! not: read or write anything.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sluice_store::ComponentRecord;
use utoipa::ToSchema;

/// `sluice:task@0.N.0`: the contract of stored minor `N`.
pub fn contract_label(minor: i16) -> String {
    format!("sluice:task@0.{minor}.0")
}

/// A stored component (without its bytes).
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ComponentView {
    /// The component's id (`sluice.components.id`); job types name it by this id.
    #[schema(minimum = 1)]
    pub id: i64,
    /// The component's name within its tenant; each version of it is its own component.
    #[schema(min_length = 1, max_length = 128)]
    pub name: String,
    /// The version string given at upload, unique per name within the tenant.
    #[schema(min_length = 1, max_length = 64)]
    pub version: String,
    /// Lowercase hex SHA-256 of the bytes.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub sha256: String,
    /// Bytes.
    #[schema(minimum = 1)]
    pub size: i64,
    /// The task contract the component targets, e.g. `sluice:task@0.2.0` (found at upload
    /// from its imports); a host runs it only if it runs that contract.
    #[schema(pattern = "^sluice:task@0\\.[0-9]+\\.0$")]
    pub contract: String,
    /// When it was uploaded.
    pub created_at: DateTime<Utc>,
}

impl From<ComponentRecord> for ComponentView {
    fn from(c: ComponentRecord) -> Self {
        ComponentView {
            id: c.id,
            name: c.name,
            version: c.version,
            sha256: c.sha256,
            size: c.size,
            contract: contract_label(c.contract),
            created_at: c.created_at,
        }
    }
}

/// One component and the job types of its tenant that run it. The fields of
/// [`ComponentView`] plus `job_types` (written out: a flattened object could not say
/// "no other fields" in the OpenAPI document).
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ComponentDetail {
    /// The component's id (`sluice.components.id`); job types name it by this id.
    #[schema(minimum = 1)]
    pub id: i64,
    /// The component's name within its tenant; each version of it is its own component.
    #[schema(min_length = 1, max_length = 128)]
    pub name: String,
    /// The version string given at upload, unique per name within the tenant.
    #[schema(min_length = 1, max_length = 64)]
    pub version: String,
    /// Lowercase hex SHA-256 of the bytes.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub sha256: String,
    /// Bytes.
    #[schema(minimum = 1)]
    pub size: i64,
    /// The task contract the component targets, e.g. `sluice:task@0.2.0`.
    #[schema(pattern = "^sluice:task@0\\.[0-9]+\\.0$")]
    pub contract: String,
    /// When it was uploaded.
    pub created_at: DateTime<Utc>,
    /// The names of the job types that run this version, by name.
    pub job_types: Vec<String>,
}

impl ComponentDetail {
    /// `record` with the names of the job types that run it.
    pub fn new(record: ComponentRecord, job_types: Vec<String>) -> Self {
        let c = ComponentView::from(record);
        ComponentDetail {
            id: c.id,
            name: c.name,
            version: c.version,
            sha256: c.sha256,
            size: c.size,
            contract: c.contract,
            created_at: c.created_at,
            job_types,
        }
    }
}

/// What `sluice component push --json` prints: the stored component and how this host's
/// precompile went.
#[derive(Debug, Serialize)]
pub struct PushedComponent {
    /// The stored component (its fields inline).
    #[serde(flatten)]
    pub component: ComponentView,
    /// Seconds spent compiling (or loading the artifact, when this host had it).
    pub prepare_seconds: f64,
    /// `compiled` or `disk_cache`.
    pub prepared_from: &'static str,
    /// The component cache it was compiled into.
    pub cache_dir: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schemas::tests::{keys, properties};

    #[test]
    fn the_detail_is_the_view_plus_its_job_types() {
        let record = ComponentRecord {
            id: 7,
            tenant: "acme".into(),
            name: "echo".into(),
            version: "1".into(),
            sha256: "ab".repeat(32),
            size: 1234,
            contract: 2,
            created_at: Utc::now(),
        };
        let view = serde_json::to_value(ComponentView::from(record.clone())).unwrap();
        let detail =
            serde_json::to_value(ComponentDetail::new(record, vec!["greet".into()])).unwrap();
        assert_eq!(keys(&view), properties::<ComponentView>());
        assert_eq!(keys(&detail), properties::<ComponentDetail>());
        let mut without = detail.as_object().unwrap().clone();
        assert_eq!(
            without.remove("job_types"),
            Some(serde_json::json!(["greet"]))
        );
        assert_eq!(serde_json::Value::Object(without), view);
        assert_eq!(view["contract"], "sluice:task@0.2.0");
        assert!(
            view.get("tenant").is_none(),
            "the tenant is the caller's: {view}"
        );
    }
}
