//! Schemas of the OpenAPI document that utoipa cannot derive from a Rust type: the
//! closed vocabularies sent as strings (job states, key scopes, catch-up policies), the
//! priority (a label or an integer), and the response bodies whose Rust types live in
//! `sluice_store` (schedules, statistics), which has no utoipa.
//!
//! Owns: these schemas, and the unit tests that pin them to what the server really
//! accepts and sends. Must not: be used to (de)serialise anything; the handlers keep
//! their own types. `tests/e2e/openapi.rs` checks real responses against all of it.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::json;
use sluice_store::JobState;
use utoipa::ToSchema;
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, SchemaFormat, SchemaType, Type};
use utoipa::openapi::{RefOr, Schema};

/// A string schema limited to `values` (and null when `nullable`).
fn string_enum(values: &[&str], nullable: bool, description: Option<&str>) -> RefOr<Schema> {
    let mut enum_values: Vec<serde_json::Value> = values.iter().map(|v| json!(v)).collect();
    let schema_type = if nullable {
        enum_values.push(serde_json::Value::Null);
        SchemaType::from_iter([Type::String, Type::Null])
    } else {
        SchemaType::Type(Type::String)
    };
    ObjectBuilder::new()
        .schema_type(schema_type)
        .enum_values(Some(enum_values))
        .description(description)
        .into()
}

/// The wire names of the job states, in lifecycle order (`sluice_store::JobState`).
pub fn job_state_names() -> Vec<&'static str> {
    JobState::ALL.iter().map(|s| s.as_str()).collect()
}

/// The key scopes (`sluice_store::KeyScope`; a unit test checks each one parses).
pub const KEY_SCOPES: [&str; 2] = ["retained", "unfinished"];

/// The catch-up policies (`sluice_store::CatchUp`; a unit test checks each one parses).
pub const CATCH_UPS: [&str; 3] = ["none", "latest", "all"];

/// The priority labels, lowest first (`sluice_store::priority::from_label`).
pub const PRIORITY_LABELS: [&str; 4] = ["low", "medium", "high", "critical"];

/// `state` of a job in a response.
pub fn job_state() -> RefOr<Schema> {
    string_enum(&job_state_names(), false, None)
}

/// The optional `state` filter of `GET /v1/jobs`.
pub fn job_state_filter() -> RefOr<Schema> {
    string_enum(&job_state_names(), false, Some("Only jobs in this state."))
}

/// How an attempt ended (`sluice_store::AttemptOutcome`), null while it runs.
pub fn attempt_outcome() -> RefOr<Schema> {
    let names: Vec<&str> = sluice_store::AttemptOutcome::ALL
        .iter()
        .map(|o| o.as_str())
        .collect();
    string_enum(&names, true, None)
}

/// `key_scope` of a job in a response.
pub fn key_scope() -> RefOr<Schema> {
    string_enum(&KEY_SCOPES, false, None)
}

/// `key_scope` of an enqueue request (null is the same as absent).
pub fn key_scope_request() -> RefOr<Schema> {
    string_enum(
        &KEY_SCOPES,
        true,
        Some(
            "`retained` (default: the key stays taken while the job exists) or \
             `unfinished` (freed when the job finishes). Only with an `idempotency_key`.",
        ),
    )
}

/// `catch_up` of a schedule request (null is the same as absent).
pub fn catch_up_request() -> RefOr<Schema> {
    string_enum(
        &CATCH_UPS,
        true,
        Some(
            "What happens to slots missed while no scheduler ran: `none`, `latest` \
             (default) or `all`.",
        ),
    )
}

/// `catch_up` of a schedule in a response.
pub fn catch_up() -> RefOr<Schema> {
    string_enum(&CATCH_UPS, false, None)
}

/// A priority in a request: a label or an integer in the `smallint` range; null is the
/// default (`medium`).
pub fn priority_request() -> RefOr<Schema> {
    OneOfBuilder::new()
        .description(Some(
            "`low` (0), `medium` (10, default), `high` (20), `critical` (30) or an integer \
             from -32768 to 32767; higher runs first.",
        ))
        .item(string_enum(&PRIORITY_LABELS, false, None))
        .item(
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(i16::MIN))
                .maximum(Some(i16::MAX)),
        )
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .examples(["high"])
        .into()
}

/// Any JSON value.
pub fn any_json() -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(SchemaType::AnyValue)
        .description(Some("Any JSON value."))
        .into()
}

/// The raw bytes of a component upload.
#[derive(Debug)]
pub struct WasmBytes;

impl utoipa::PartialSchema for WasmBytes {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::Custom("binary".into())))
            .into()
    }
}

impl ToSchema for WasmBytes {}

/// A schedule as the API returns it (`sluice_store::ScheduleRecord`, serialised).
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Schedule {
    #[schema(minimum = 1)]
    pub id: i64,
    pub tenant: String,
    #[schema(min_length = 1, max_length = 128)]
    pub name: String,
    /// The cron expression, as given.
    pub cron: String,
    /// IANA time zone of the expression.
    pub tz: String,
    /// The job type every slot enqueues.
    #[schema(min_length = 1, max_length = 128)]
    pub job_type: String,
    /// The payload of every job, as text (the JSON given at creation).
    pub payload: String,
    #[schema(minimum = -32768, maximum = 32767)]
    pub priority: i32,
    /// Attempts of each job (null: the job type's).
    #[schema(required = true, minimum = 1)]
    pub max_attempts: Option<i32>,
    #[schema(minimum = 0)]
    pub jitter_ms: i64,
    #[schema(schema_with = catch_up)]
    pub catch_up: String,
    #[schema(minimum = 1)]
    pub max_catch_up: i32,
    pub paused: bool,
    /// The earliest slot not yet fired or skipped (null: never again).
    #[schema(required = true)]
    pub next_slot: Option<DateTime<Utc>>,
    #[schema(required = true)]
    pub last_fired_slot: Option<DateTime<Utc>>,
    /// Slots that enqueued a job.
    #[schema(minimum = 0)]
    pub fired_count: i64,
    /// Slots that came due but did not run.
    #[schema(minimum = 0)]
    pub skipped_count: i64,
    /// Why the last slot could not enqueue (cleared by the next success).
    #[schema(required = true)]
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// `kind` of a registered process (`sluice_store::WorkerKind`).
pub fn worker_kind() -> RefOr<Schema> {
    string_enum(&["worker", "scheduler"], false, None)
}

/// `state` of a registered process (`sluice_store::WorkerState`).
pub fn worker_state() -> RefOr<Schema> {
    let states: Vec<&str> = sluice_store::WorkerState::ALL
        .iter()
        .map(|s| s.as_str())
        .collect();
    string_enum(
        &states,
        false,
        Some(
            "`running`; `lost`: not stopped, but no heartbeat for longer than its lease (it \
             died or cannot reach the database); `stopped`: it shut down.",
        ),
    )
}

/// A process in the worker registry (`sluice_store::WorkerRecord`, serialised; the JSON
/// of `sluice workers list --json`).
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Worker {
    /// Its worker id (`locked_by` of the jobs it claims).
    #[schema(min_length = 1)]
    pub id: String,
    #[schema(schema_with = worker_kind)]
    pub kind: String,
    #[schema(schema_with = worker_state)]
    pub state: String,
    pub hostname: String,
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
    pub started_at: DateTime<Utc>,
    pub last_heartbeat: DateTime<Utc>,
    #[schema(required = true)]
    pub stopped_at: Option<DateTime<Utc>>,
}

/// Jobs per state; `ready` is the part of `pending` that is due now.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StateCounts {
    #[schema(minimum = 0)]
    pub pending: i64,
    #[schema(minimum = 0)]
    pub ready: i64,
    #[schema(minimum = 0)]
    pub running: i64,
    #[schema(minimum = 0)]
    pub completed: i64,
    #[schema(minimum = 0)]
    pub dead: i64,
    #[schema(minimum = 0)]
    pub cancelled: i64,
}

/// The figures of one job type.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TypeStats {
    pub tenant: String,
    pub job_type: String,
    /// False when jobs of this type exist but the type is no longer registered.
    pub registered: bool,
    pub counts: StateCounts,
    #[schema(required = true, minimum = 0)]
    pub oldest_ready_age_seconds: Option<f64>,
    #[schema(minimum = 0)]
    pub lease_expirations_last_hour: i64,
}

/// Queue statistics of the caller's tenant (`sluice_store::Stats`, serialised; the JSON
/// of `sluice stats --json`).
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Stats {
    /// The tenant the figures are scoped to (the caller's).
    #[schema(required = true)]
    pub tenant: Option<String>,
    /// Database time when the figures were taken.
    pub as_of: DateTime<Utc>,
    /// Jobs per state, summed over `types`.
    pub totals: StateCounts,
    /// Seconds the oldest ready job has waited since its `run_at` (null: none ready).
    #[schema(required = true, minimum = 0)]
    pub oldest_ready_age_seconds: Option<f64>,
    /// Attempts ended by an expired lease within the last hour.
    #[schema(minimum = 0)]
    pub lease_expirations_last_hour: i64,
    /// One row per job type that is registered or has jobs.
    pub types: Vec<TypeStats>,
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::str::FromStr;

    use sluice_store::{CatchUp, KeyScope, ScheduleRecord};
    use utoipa::PartialSchema;

    use super::*;

    /// The property names of a derived object schema.
    fn properties<T: PartialSchema>() -> BTreeSet<String> {
        match T::schema() {
            RefOr::T(Schema::Object(object)) => object.properties.keys().cloned().collect(),
            other => panic!(
                "not an object schema: {}",
                serde_json::to_string(&other).unwrap()
            ),
        }
    }

    fn keys(value: &serde_json::Value) -> BTreeSet<String> {
        value.as_object().unwrap().keys().cloned().collect()
    }

    #[test]
    fn every_listed_key_scope_and_catch_up_policy_is_accepted_by_the_server_types() {
        for scope in KEY_SCOPES {
            let parsed: KeyScope = serde_json::from_value(json!(scope)).unwrap();
            assert_eq!(parsed.as_str(), scope);
        }
        for policy in CATCH_UPS {
            CatchUp::from_str(policy).unwrap();
        }
        for label in PRIORITY_LABELS {
            assert!(
                sluice_store::priority::from_label(label).is_some(),
                "{label}"
            );
        }
    }

    #[test]
    fn the_schedule_schema_names_exactly_the_fields_a_schedule_record_serialises() {
        let now = Utc::now();
        let record = ScheduleRecord {
            id: 1,
            tenant: "acme".into(),
            name: "nightly".into(),
            cron: "0 3 * * *".into(),
            tz: "UTC".into(),
            job_type: "report".into(),
            payload: b"{}".to_vec(),
            priority: 10,
            max_attempts: None,
            jitter_ms: 0,
            catch_up: CatchUp::Latest,
            max_catch_up: 10,
            paused: false,
            next_slot: Some(now),
            last_fired_slot: None,
            fired_count: 0,
            skipped_count: 0,
            last_error: None,
            created_at: now,
            updated_at: now,
        };
        let value = serde_json::to_value(&record).unwrap();
        assert_eq!(keys(&value), properties::<Schedule>());
        assert_eq!(value["catch_up"], "latest");
        assert_eq!(value["payload"], "{}");
    }

    #[test]
    fn the_worker_schema_names_exactly_the_fields_a_worker_record_serialises() {
        let now = Utc::now();
        for (kind, state) in [
            (
                sluice_store::WorkerKind::Worker,
                sluice_store::WorkerState::Running,
            ),
            (
                sluice_store::WorkerKind::Scheduler,
                sluice_store::WorkerState::Lost,
            ),
        ] {
            let record = sluice_store::WorkerRecord {
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
            let value = serde_json::to_value(&record).unwrap();
            assert_eq!(keys(&value), properties::<Worker>());
            assert_eq!(value["kind"], kind.as_str());
            assert_eq!(value["state"], state.as_str());
        }
    }

    #[test]
    fn the_stats_schema_names_exactly_the_fields_stats_serialise() {
        let stats = sluice_store::Stats {
            tenant: Some("acme".into()),
            as_of: Utc::now(),
            totals: Default::default(),
            oldest_ready_age_seconds: None,
            lease_expirations_last_hour: 0,
            types: vec![sluice_store::TypeStats {
                tenant: "acme".into(),
                job_type: "report".into(),
                registered: true,
                counts: Default::default(),
                oldest_ready_age_seconds: Some(1.5),
                lease_expirations_last_hour: 0,
            }],
        };
        let value = serde_json::to_value(&stats).unwrap();
        assert_eq!(keys(&value), properties::<Stats>());
        assert_eq!(keys(&value["totals"]), properties::<StateCounts>());
        assert_eq!(keys(&value["types"][0]), properties::<TypeStats>());
    }
}
