//! How a registered process looks in JSON ([`WorkerView`]: `GET /v1/workers`, `sluice
//! workers list --json`): kind and state by name, the lease in milliseconds.
//!
//! Owns: this shape and its conversion from `sluice_store::WorkerRecord`. Must not: read
//! or write anything, or compute a state (the store reads it against the database clock).

use chrono::{DateTime, Utc};
use serde::Serialize;
use sluice_store::WorkerRecord;
use utoipa::ToSchema;

use super::schemas;

/// A process in the worker registry.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = Worker)]
pub struct WorkerView {
    /// Its worker id (`locked_by` of the jobs it claims).
    #[schema(min_length = 1)]
    pub id: String,
    /// `worker` (claims and runs jobs) or `scheduler` (fires schedules and runs retention,
    /// claims nothing).
    #[schema(schema_with = schemas::worker_kind)]
    pub kind: String,
    /// `running`, `lost` (no heartbeat for longer than its lease: it died or cannot reach
    /// the database) or `stopped` (it shut down and said so), read against the database
    /// clock.
    #[schema(schema_with = schemas::worker_state)]
    pub state: String,
    /// The host name of the machine it runs on.
    pub hostname: String,
    /// Its operating-system process id on that machine.
    #[schema(minimum = 0)]
    pub pid: i32,
    /// The `sluice` version it runs.
    pub version: String,
    /// The task contracts it runs (`0.1`, `0.2`); empty for a scheduler.
    pub contracts: Vec<String>,
    /// Attempts it runs at once (null for a scheduler).
    #[schema(required = true, minimum = 1)]
    pub concurrency: Option<i32>,
    /// Without a heartbeat for longer than this, it is lost.
    #[schema(minimum = 0)]
    pub lease_ms: i64,
    /// When it registered.
    pub started_at: DateTime<Utc>,
    /// Its last heartbeat (a worker's job heartbeat renews it too).
    pub last_heartbeat: DateTime<Utc>,
    /// When it shut down; null while running or lost.
    #[schema(required = true)]
    pub stopped_at: Option<DateTime<Utc>>,
}

impl From<WorkerRecord> for WorkerView {
    fn from(w: WorkerRecord) -> Self {
        WorkerView {
            id: w.id,
            kind: w.kind.as_str().to_owned(),
            state: w.state.as_str().to_owned(),
            hostname: w.hostname,
            pid: w.pid,
            version: w.version,
            contracts: w.contracts,
            concurrency: w.concurrency,
            lease_ms: w.lease_ms,
            started_at: w.started_at,
            last_heartbeat: w.last_heartbeat,
            stopped_at: w.stopped_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use sluice_store::{WorkerKind, WorkerState};

    use super::*;
    use crate::schemas::tests::{keys, properties};

    #[test]
    fn the_worker_schema_names_exactly_the_fields_a_worker_serialises() {
        let now = Utc::now();
        for (kind, state) in [
            (WorkerKind::Worker, WorkerState::Running),
            (WorkerKind::Scheduler, WorkerState::Lost),
        ] {
            let record = WorkerRecord {
                id: "box-1-42".into(),
                kind,
                state,
                hostname: "box-1".into(),
                pid: 42,
                version: "0.1.0".into(),
                contracts: vec!["0.1".into()],
                concurrency: Some(4),
                lease_ms: 300_000,
                started_at: now,
                last_heartbeat: now,
                stopped_at: None,
            };
            let value = serde_json::to_value(WorkerView::from(record)).unwrap();
            assert_eq!(keys(&value), properties::<WorkerView>());
            assert_eq!(value["kind"], kind.as_str());
            assert_eq!(value["state"], state.as_str());
        }
    }
}
