//! Whether this client matches an OpenAPI document (the live one of a server, or the
//! snapshot `clients/openapi.json`): every operation (method, path, query parameters) and
//! every component schema (its property names) the generator saw, no more and no fewer.
//! The generator records what it saw in `generated::OPERATIONS` and `generated::SCHEMAS`.
//!
//! Owns: [`document_differences`]. Must not: compare types in depth (`generate.py --check`
//! against the snapshot does, and the lead's test compares the live document with it).

use std::collections::BTreeSet;

use serde_json::Value;

use crate::generated::{OPERATIONS, SCHEMAS};

/// One operation as the generator saw it (`generated::OPERATIONS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operation {
    /// `GET`, `POST`, ...
    pub method: &'static str,
    /// The path template, `/v1/jobs/{id}`.
    pub path: &'static str,
    /// The method of [`crate::Api`] that calls it.
    pub function: &'static str,
    /// The names of its query parameters.
    pub query: &'static [&'static str],
}

impl Operation {
    /// An operation: method, path template, [`crate::Api`] method, query parameters.
    pub const fn new(
        method: &'static str,
        path: &'static str,
        function: &'static str,
        query: &'static [&'static str],
    ) -> Self {
        Operation {
            method,
            path,
            function,
            query,
        }
    }
}

const METHODS: [&str; 7] = ["get", "put", "post", "delete", "patch", "head", "options"];

/// What differs between this client and `document`, one line each; empty when the
/// client has every operation, query parameter, schema and property of it, and no other.
pub fn document_differences(document: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let ours: BTreeSet<String> = OPERATIONS.iter().map(operation_line).collect();
    let theirs: BTreeSet<String> = document_operations(document).into_iter().collect();
    compare("operation", &ours, &theirs, &mut out);
    let ours: BTreeSet<String> = SCHEMAS
        .iter()
        .flat_map(|(name, fields)| {
            std::iter::once(name.to_string()).chain(
                fields
                    .split_whitespace()
                    .map(move |f| format!("{name}.{f}")),
            )
        })
        .collect();
    let theirs: BTreeSet<String> = document_schemas(document).into_iter().collect();
    compare("schema or property", &ours, &theirs, &mut out);
    out
}

fn compare(what: &str, ours: &BTreeSet<String>, theirs: &BTreeSet<String>, out: &mut Vec<String>) {
    for missing in theirs.difference(ours) {
        out.push(format!(
            "the document has {what} {missing}; the client does not"
        ));
    }
    for extra in ours.difference(theirs) {
        out.push(format!(
            "the client has {what} {extra}; the document does not"
        ));
    }
}

fn operation_line(op: &Operation) -> String {
    let mut query: Vec<&str> = op.query.to_vec();
    query.sort_unstable();
    format!("{} {} ?{}", op.method, op.path, query.join("&"))
}

fn document_operations(document: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let Some(paths) = document["paths"].as_object() else {
        return out;
    };
    for (path, item) in paths {
        for method in METHODS {
            let Some(operation) = item.get(method) else {
                continue;
            };
            let mut query: Vec<&str> = [&item["parameters"], &operation["parameters"]]
                .into_iter()
                .filter_map(Value::as_array)
                .flatten()
                .filter(|p| p["in"] == "query")
                .filter_map(|p| p["name"].as_str())
                .collect();
            query.sort_unstable();
            out.push(format!(
                "{} {path} ?{}",
                method.to_uppercase(),
                query.join("&")
            ));
        }
    }
    out
}

fn document_schemas(document: &Value) -> Vec<String> {
    let schemas = &document["components"]["schemas"];
    let mut out = Vec::new();
    for (name, schema) in schemas.as_object().into_iter().flatten() {
        out.push(name.clone());
        let mut fields = BTreeSet::new();
        properties(schemas, schema, &mut fields, 0);
        out.extend(fields.into_iter().map(|f| format!("{name}.{f}")));
    }
    out
}

/// The property names of an object schema, its `allOf` members merged.
fn properties(schemas: &Value, schema: &Value, out: &mut BTreeSet<String>, depth: usize) {
    if depth > 16 {
        return;
    }
    for member in schema["allOf"].as_array().into_iter().flatten() {
        match member["$ref"].as_str() {
            Some(reference) => {
                let name = reference.trim_start_matches("#/components/schemas/");
                properties(schemas, &schemas[name], out, depth + 1);
            }
            None => properties(schemas, member, out, depth + 1),
        }
    }
    out.extend(
        schema["properties"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k.clone()),
    );
}
