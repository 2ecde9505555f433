//! Schemas of the OpenAPI document that utoipa cannot derive from a Rust type: the
//! closed vocabularies sent as strings (job states, key scopes, catch-up policies, worker
//! kinds and states), the priority (a label or an integer), any JSON value and the raw
//! bytes of an upload. The views of this module and the HTTP requests point at them with
//! `#[schema(schema_with = …)]`.
//!
//! Owns: these schemas, and the unit test that pins the vocabularies to what the server
//! really accepts. Must not: be used to (de)serialise anything.
//! `tests/e2e/openapi.rs` checks real responses against all of it.

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

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeSet;
    use std::str::FromStr;

    use sluice_store::{CatchUp, KeyScope};
    use utoipa::PartialSchema;

    use super::*;

    /// The property names of a derived object schema.
    pub(crate) fn properties<T: PartialSchema>() -> BTreeSet<String> {
        match T::schema() {
            RefOr::T(Schema::Object(object)) => object.properties.keys().cloned().collect(),
            other => panic!(
                "not an object schema: {}",
                serde_json::to_string(&other).unwrap()
            ),
        }
    }

    /// The keys of a JSON object.
    pub(crate) fn keys(value: &serde_json::Value) -> BTreeSet<String> {
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
}
