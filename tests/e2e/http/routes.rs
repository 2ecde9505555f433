//! The router as a whole: `/healthz`, the error shape of unknown routes and methods, and
//! an OpenAPI document that lists every route the router serves.

use reqwest::Method;
use sqlx::PgPool;

use crate::support::http::{Api, error_of, json};

/// The routes issue #4 asks for (method, path as in the OpenAPI document), and the `GET`
/// of one thing issue #37 adds beside each `sluice X show`.
const EXPECTED: &[(&str, &str)] = &[
    ("post", "/v1/jobs"),
    ("get", "/v1/jobs"),
    ("get", "/v1/jobs/{id}"),
    ("get", "/v1/jobs/{id}/attempts"),
    ("post", "/v1/jobs/{id}/cancel"),
    ("post", "/v1/jobs/{id}/retry"),
    ("post", "/v1/jobs/{id}/signals/{name}"),
    ("get", "/v1/jobs/{id}/attempts/{n}/logs"),
    ("get", "/v1/jobs/{id}/journal"),
    ("post", "/v1/jobs:batch"),
    ("put", "/v1/components/{name}"),
    ("get", "/v1/components"),
    ("get", "/v1/components/{name}"),
    ("put", "/v1/job-types/{type}"),
    ("get", "/v1/job-types"),
    ("get", "/v1/job-types/{type}"),
    ("patch", "/v1/job-types/{type}/flow"),
    ("post", "/v1/job-types/{type}/pause"),
    ("post", "/v1/job-types/{type}/resume"),
    ("post", "/v1/schedules"),
    ("get", "/v1/schedules"),
    ("get", "/v1/schedules/{name}"),
    ("delete", "/v1/schedules/{name}"),
    ("post", "/v1/schedules/{name}/pause"),
    ("post", "/v1/schedules/{name}/resume"),
    ("put", "/v1/secrets/{name}"),
    ("get", "/v1/secrets"),
    ("delete", "/v1/secrets/{name}"),
    ("post", "/v1/webhooks"),
    ("get", "/v1/webhooks"),
    ("get", "/v1/webhooks/{id}"),
    ("patch", "/v1/webhooks/{id}"),
    ("delete", "/v1/webhooks/{id}"),
    ("post", "/v1/webhooks/{id}/rotate-secret"),
    ("post", "/v1/webhooks/{id}/test"),
    ("get", "/v1/webhooks/{id}/deliveries"),
    ("get", "/v1/webhooks/deliveries/{id}"),
    ("post", "/v1/webhooks/deliveries/{id}/redeliver"),
    ("post", "/v1/events"),
    ("get", "/v1/stats"),
    ("get", "/v1/usage"),
    ("get", "/v1/workers"),
    ("get", "/v1/tenants/{id}"),
    ("post", "/v1/tenants/{id}/pause"),
    ("post", "/v1/tenants/{id}/resume"),
    ("get", "/healthz"),
    ("get", "/v1/openapi.json"),
];

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn health_and_unknown_routes_answer_in_the_api_shape(pool: PgPool) {
    let api = Api::start(&pool).await;
    let (status, body) = json(api.get("/healthz", "").await).await;
    assert_eq!((status, body["status"].as_str()), (200, Some("ok")));

    // Prometheus text, without a token (metrics show counts, never job contents).
    let metrics = api.get("/metrics", "").await;
    assert_eq!(metrics.status().as_u16(), 200);
    let text = metrics.text().await.unwrap();
    assert!(text.contains("# TYPE sluice_"), "{text}");

    let (status, body) = json(api.get("/v1/nothing-here", "").await).await;
    assert_eq!(status, 404);
    assert_eq!(error_of(&body).0, "route_not_found");
    let (status, body) = json(
        api.req(Method::DELETE, "/v1/jobs", "")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 405);
    assert_eq!(error_of(&body).0, "method_not_allowed");
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn the_openapi_document_lists_every_route_the_router_serves(pool: PgPool) {
    let api = Api::start(&pool).await;
    let (status, doc) = json(api.get("/v1/openapi.json", "").await).await;
    assert_eq!(status, 200);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."), "{doc}");
    let mut documented = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            if ["get", "put", "post", "delete", "patch"].contains(&method.as_str()) {
                documented.push((method.clone(), path.clone()));
            }
        }
    }
    documented.sort();
    let mut expected: Vec<(String, String)> = EXPECTED
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    expected.sort();
    assert_eq!(documented, expected);

    // Every documented route is served by the router: a request reaches a handler (an
    // authentication error or an answer), never the unknown-route or wrong-method
    // fallback.
    for (method, path) in &documented {
        let concrete = path
            .replace("{id}", "1")
            .replace("{name}", "x")
            .replace("{type}", "x");
        let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
        let response = api.req(method.clone(), &concrete, "").send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let code = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|body| body["error"]["code"].as_str().map(str::to_owned));
        assert!(
            !matches!(
                code.as_deref(),
                Some("route_not_found" | "method_not_allowed")
            ),
            "{method} {concrete} is documented but not routed: {status} {text}"
        );
    }
    assert!(
        doc["components"]["securitySchemes"]["bearer"].is_object(),
        "{doc}"
    );
}

/// `sluice serve --metrics-auth`: `/metrics` answers an admin token only.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn metrics_auth_lets_only_admin_tokens_scrape(pool: PgPool) {
    let api = Api::start_with(
        &pool,
        sluice_http::app_state::ServeConfig {
            admin_token: Some(crate::support::http::ENV_ADMIN_TOKEN.into()),
            metrics_require_admin: true,
            ..sluice_http::app_state::ServeConfig::default()
        },
    )
    .await;
    let tenant_token = api.tenant("acme").await;
    let (status, body) = json(api.get("/metrics", "").await).await;
    assert_eq!((status, error_of(&body).0.as_str()), (401, "unauthorized"));
    let (status, body) = json(api.get("/metrics", &tenant_token).await).await;
    assert_eq!((status, error_of(&body).0.as_str()), (403, "forbidden"));
    let admin = api
        .get("/metrics", crate::support::http::ENV_ADMIN_TOKEN)
        .await;
    assert_eq!(admin.status().as_u16(), 200);
    assert!(admin.text().await.unwrap().contains("# TYPE sluice_"));
}
