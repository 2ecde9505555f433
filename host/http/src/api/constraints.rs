//! The constraints the server enforces that utoipa's attributes cannot carry, applied to
//! the generated OpenAPI document: patterns built from the server's own constants
//! (`patterns`), the time zones the store knows, the text rule every field shares (no
//! NUL), the range of every integer (what its Rust type holds), and JSON without NUL
//! where a value is stored as `jsonb`. With them, a request the document allows is one
//! the server accepts for its form (`tests/e2e/openapi.rs` checks it with schemathesis'
//! positive-data acceptance) and typed clients generated from the document refuse what
//! the server would.
//!
//! Owns: the table of per-field rules ([`RULES`]) and the generic passes. Must not:
//! check requests (handlers, `validate` and the store do, from the same constants). A
//! rule that names a field the document lacks panics when the router is built, so a
//! renamed field cannot silently lose its constraint.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Map, Value, json};
use sluice_store::{
    MAX_CRON_CHARS, MAX_DELAY, MAX_JITTER, MAX_RETRY_STEP, MAX_URL_LEN, MAX_WEBHOOK_TIMEOUT,
    MIN_WEBHOOK_TIMEOUT,
};

use super::patterns;
use sluice_wire::webhooks::MAX_ROTATION_GRACE;

/// Where a rule applies.
enum Target {
    /// A property of a component schema.
    Property(&'static str, &'static str),
    /// The items of an array property of a component schema.
    Items(&'static str, &'static str),
    /// A path or query parameter of an operation: path, method, name.
    Parameter(&'static str, &'static str, &'static str),
}

/// What a rule adds: a pattern, or any keywords.
enum Rule {
    Pattern(fn() -> String),
    Keywords(fn() -> Value),
}

fn duration(min: Duration, max: Duration) -> String {
    patterns::duration(min, max)
}

fn delay() -> String {
    duration(Duration::ZERO, MAX_DELAY)
}
fn job_wait() -> String {
    duration(Duration::ZERO, super::job_views::MAX_JOB_WAIT)
}
fn jitter() -> String {
    duration(Duration::ZERO, MAX_JITTER)
}
fn webhook_timeout() -> String {
    duration(MIN_WEBHOOK_TIMEOUT, MAX_WEBHOOK_TIMEOUT)
}
fn retry_step() -> String {
    duration(Duration::ZERO, MAX_RETRY_STEP)
}
fn grace() -> String {
    duration(Duration::ZERO, MAX_ROTATION_GRACE)
}
fn event_type() -> String {
    patterns::EVENT_TYPE.to_owned()
}
fn event_pattern() -> String {
    patterns::EVENT_PATTERN.to_owned()
}
fn job_type_name() -> String {
    patterns::not_starting_with("sluice.")
}
fn secret_name() -> String {
    format!(
        "^[A-Za-z_][A-Za-z0-9_]{{0,{}}}$",
        sluice_store::MAX_SECRET_NAME_LEN - 1
    )
}
fn cron() -> Value {
    json!({ "pattern": patterns::cron(), "maxLength": MAX_CRON_CHARS })
}
fn webhook_url() -> Value {
    json!({ "pattern": patterns::webhook_url(), "maxLength": MAX_URL_LEN })
}
fn allow_entry() -> Value {
    json!({
        "pattern": patterns::allow_entry(),
        "minLength": 1,
        "maxLength": patterns::ALLOW_ENTRY_MAX_CHARS,
    })
}
fn run_at() -> Value {
    // 1971..=9998 keeps any offset inside RUN_AT_MIN..=RUN_AT_MAX (1970..=9999).
    json!({ "pattern": patterns::year_prefix(1971, 9998) })
}
fn time_zone() -> Value {
    let mut zones: Vec<Value> = sluice_store::time_zone_names().map(Value::from).collect();
    zones.push(Value::Null);
    json!({ "enum": zones })
}
fn backoff_ms() -> Value {
    json!({ "maximum": MAX_DELAY.as_millis() as u64 })
}
fn no_nul_json() -> Value {
    json!({ "$ref": "#/components/schemas/JsonWithoutNul" })
}

use Rule::{Keywords, Pattern};
use Target::{Items, Parameter, Property};

/// Per-field rules: every constraint a validator holds that the derive cannot state.
const RULES: &[(Target, Rule)] = &[
    (Property("EnqueueRequest", "delay"), Pattern(delay)),
    (Parameter("/v1/jobs/{id}", "get", "wait"), Pattern(job_wait)),
    (Parameter("/v1/usage", "get", "since"), Keywords(run_at)),
    (Parameter("/v1/usage", "get", "until"), Keywords(run_at)),
    (
        Property("JobTypeRequest", "backoff_base_ms"),
        Keywords(backoff_ms),
    ),
    (
        Property("JobTypeRequest", "backoff_cap_ms"),
        Keywords(backoff_ms),
    ),
    (Property("EnqueueRequest", "run_at"), Keywords(run_at)),
    (Property("ScheduleRequest", "jitter"), Pattern(jitter)),
    (Property("ScheduleRequest", "cron"), Keywords(cron)),
    (Property("ScheduleRequest", "tz"), Keywords(time_zone)),
    (
        Property("CreateEndpointRequest", "url"),
        Keywords(webhook_url),
    ),
    (
        Property("UpdateEndpointRequest", "url"),
        Keywords(webhook_url),
    ),
    (
        Items("CreateEndpointRequest", "events"),
        Pattern(event_pattern),
    ),
    (
        Items("UpdateEndpointRequest", "events"),
        Pattern(event_pattern),
    ),
    (
        Property("CreateEndpointRequest", "timeout"),
        Pattern(webhook_timeout),
    ),
    (
        Property("UpdateEndpointRequest", "timeout"),
        Pattern(webhook_timeout),
    ),
    (
        Items("CreateEndpointRequest", "retry_schedule"),
        Pattern(retry_step),
    ),
    (
        Items("UpdateEndpointRequest", "retry_schedule"),
        Pattern(retry_step),
    ),
    (Property("RotateRequest", "grace"), Pattern(grace)),
    (Property("EventRequest", "type"), Pattern(event_type)),
    (Property("EventRequest", "payload"), Keywords(no_nul_json)),
    (Items("JobTypeRequest", "allow_http"), Keywords(allow_entry)),
    (Items("JobTypeRequest", "secrets"), Pattern(secret_name)),
    (
        Parameter("/v1/job-types/{type}", "put", "type"),
        Pattern(job_type_name),
    ),
    (
        Parameter("/v1/jobs", "get", "cursor"),
        Pattern(patterns::cursor),
    ),
    (
        Parameter("/v1/webhooks/{id}", "get", "id"),
        Pattern(patterns::endpoint_id),
    ),
    (
        Parameter("/v1/webhooks/{id}", "patch", "id"),
        Pattern(patterns::endpoint_id),
    ),
    (
        Parameter("/v1/webhooks/{id}", "delete", "id"),
        Pattern(patterns::endpoint_id),
    ),
    (
        Parameter("/v1/webhooks/{id}/rotate-secret", "post", "id"),
        Pattern(patterns::endpoint_id),
    ),
    (
        Parameter("/v1/webhooks/{id}/test", "post", "id"),
        Pattern(patterns::endpoint_id),
    ),
    (
        Parameter("/v1/webhooks/{id}/deliveries", "get", "id"),
        Pattern(patterns::endpoint_id),
    ),
];

/// The schema node a target names; panics when the document has no such field.
fn node<'a>(doc: &'a mut Value, target: &Target) -> &'a mut Value {
    let found = match target {
        Property(schema, field) => {
            doc.pointer_mut(&format!("/components/schemas/{schema}/properties/{field}"))
        }
        Items(schema, field) => doc.pointer_mut(&format!(
            "/components/schemas/{schema}/properties/{field}/items"
        )),
        Parameter(path, method, name) => {
            let path = path.replace('~', "~0").replace('/', "~1");
            doc.pointer_mut(&format!("/paths/{path}/{method}/parameters"))
                .and_then(Value::as_array_mut)
                .and_then(|params| params.iter_mut().find(|p| p["name"] == *name))
                .map(|p| &mut p["schema"])
        }
    };
    let describe = || match target {
        Property(s, f) => format!("{s}.{f}"),
        Items(s, f) => format!("{s}.{f}[]"),
        Parameter(p, m, n) => format!("{m} {p} parameter {n}"),
    };
    found
        .filter(|n| n.is_object())
        .unwrap_or_else(|| panic!("the OpenAPI document has no {}", describe()))
}

/// JSON whose strings and keys hold no NUL, for values stored as `jsonb`.
fn json_without_nul() -> Value {
    json!({
        "description": "Any JSON value whose strings and keys hold no NUL (U+0000): it is stored as `jsonb`.",
        "anyOf": [
            { "type": ["null", "boolean", "number"] },
            { "type": "string", "pattern": patterns::NO_NUL },
            { "type": "array", "items": { "$ref": "#/components/schemas/JsonWithoutNul" } },
            {
                "type": "object",
                "propertyNames": { "pattern": patterns::NO_NUL },
                "additionalProperties": { "$ref": "#/components/schemas/JsonWithoutNul" }
            }
        ]
    })
}

/// Applies every constraint to the generated document.
pub fn apply(doc: &mut Value) {
    doc["components"]["schemas"]["JsonWithoutNul"] = json_without_nul();
    for (target, rule) in RULES {
        let node = node(doc, target);
        match rule {
            Pattern(pattern) => node["pattern"] = Value::String(pattern()),
            Keywords(keywords) => match keywords() {
                Value::Object(extra) if extra.contains_key("$ref") => *node = Value::Object(extra),
                Value::Object(extra) => node.as_object_mut().unwrap().extend(extra),
                other => unreachable!("keywords are an object: {other}"),
            },
        }
    }
    for schema in request_schemas(doc) {
        if let Some(node) = doc.pointer_mut(&format!("/components/schemas/{schema}")) {
            constrain(node);
        }
    }
    let paths = doc["paths"]
        .as_object_mut()
        .expect("the document has paths");
    for item in paths.values_mut() {
        for operation in item
            .as_object_mut()
            .into_iter()
            .flat_map(|o| o.values_mut())
        {
            if let Some(params) = operation
                .get_mut("parameters")
                .and_then(Value::as_array_mut)
            {
                for param in params {
                    constrain(&mut param["schema"]);
                }
            }
        }
    }
}

/// The component schemas request bodies use, directly or through references.
fn request_schemas(doc: &Value) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut todo: Vec<&Value> = doc["paths"]
        .as_object()
        .into_iter()
        .flat_map(|paths| paths.values())
        .flat_map(|item| item.as_object().into_iter().flat_map(|o| o.values()))
        .filter_map(|operation| operation.get("requestBody"))
        .collect();
    while let Some(value) = todo.pop() {
        match value {
            Value::Object(map) => {
                if let Some(name) = map
                    .get("$ref")
                    .and_then(Value::as_str)
                    .and_then(|r| r.strip_prefix("#/components/schemas/"))
                    && found.insert(name.to_owned())
                {
                    todo.push(&doc["components"]["schemas"][name]);
                }
                todo.extend(map.values());
            }
            Value::Array(items) => todo.extend(items),
            _ => {}
        }
    }
    found
}

/// The generic rules on one request schema and everything inside it: free text holds
/// no NUL; an integer stays within what its format's Rust type holds.
fn constrain(node: &mut Value) {
    match node {
        Value::Object(map) => {
            text_without_nul(map);
            integer_range(map);
            for (key, value) in map.iter_mut() {
                if key != "enum" && key != "examples" && key != "example" {
                    constrain(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(constrain),
        _ => {}
    }
}

fn has_type(map: &Map<String, Value>, name: &str) -> bool {
    match map.get("type") {
        Some(Value::String(t)) => t == name,
        Some(Value::Array(types)) => types.iter().any(|t| t == name),
        _ => false,
    }
}

fn text_without_nul(map: &mut Map<String, Value>) {
    let free = !["pattern", "enum", "format", "const"]
        .iter()
        .any(|k| map.contains_key(*k));
    if has_type(map, "string") && free {
        map.insert("pattern".into(), patterns::NO_NUL.into());
    }
}

fn integer_range(map: &mut Map<String, Value>) {
    if !has_type(map, "integer") {
        return;
    }
    let (min, max) = match map.get("format").and_then(Value::as_str) {
        Some("int32") => (i64::from(i32::MIN), i64::from(i32::MAX)),
        Some("int64") => (i64::MIN, i64::MAX),
        _ => return,
    };
    map.entry("minimum").or_insert(min.into());
    map.entry("maximum").or_insert(max.into());
}
