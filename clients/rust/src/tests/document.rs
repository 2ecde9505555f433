//! The generated layer against the snapshot `clients/openapi.json`: every operation,
//! query parameter, schema and property, no more and no fewer (a route or field added to
//! the document and not generated fails here as well as in `generate.py --check`).

use serde_json::{Value, json};

use crate::document::document_differences;

fn snapshot() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../openapi.json");
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{path}: {e} (the lead's snapshot of the live document)"));
    serde_json::from_str(&text).expect("clients/openapi.json is JSON")
}

#[test]
fn the_generated_layer_matches_the_snapshot() {
    let differences = document_differences(&snapshot());
    assert!(
        differences.is_empty(),
        "regenerate: python3 clients/rust/generate.py\n{}",
        differences.join("\n")
    );
}

#[test]
fn an_added_route_query_parameter_or_field_is_a_difference() {
    let mut document = snapshot();
    document["paths"]["/v1/brand-new"] = json!({"get": {"responses": {}}});
    let (path, item) = document["paths"]
        .as_object_mut()
        .unwrap()
        .iter_mut()
        .find(|(p, _)| p.as_str() != "/v1/brand-new")
        .map(|(p, i)| (p.clone(), i))
        .unwrap();
    let method = ["get", "post", "put", "delete", "patch"]
        .into_iter()
        .find(|m| item.get(*m).is_some())
        .unwrap();
    let params = item[method]
        .as_object_mut()
        .unwrap()
        .entry("parameters")
        .or_insert(json!([]));
    params
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "brand_new", "in": "query", "schema": {"type": "string"}}));
    let (name, schema) = document["components"]["schemas"]
        .as_object_mut()
        .unwrap()
        .iter_mut()
        .find(|(_, s)| s.get("properties").is_some())
        .unwrap();
    let name = name.clone();
    schema["properties"]["brand_new"] = json!({"type": "string"});
    let differences = document_differences(&document);
    let text = differences.join("\n");
    assert!(text.contains("GET /v1/brand-new"), "{text}");
    assert!(
        text.contains(&format!("{} {path} ?", method.to_uppercase())),
        "{text}"
    );
    assert!(text.contains("brand_new"), "{text}");
    assert!(text.contains(&format!("{name}.brand_new")), "{text}");
}
