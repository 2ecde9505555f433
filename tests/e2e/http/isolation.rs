//! Tenant isolation: tenant A's token cannot see, list, cancel or retry B's jobs, nor use
//! B's job types or components — each answer a 404 exactly like a missing thing. Admin
//! tokens (stored or `SLUICE_ADMIN_TOKEN`) act for any tenant via `X-Sluice-Tenant`.

use reqwest::Method;
use serde_json::json;
use sqlx::PgPool;

use crate::support::http::{Api, ENV_ADMIN_TOKEN, error_of, json};

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_tenant_cannot_reach_another_tenants_jobs_types_or_components(pool: PgPool) {
    let api = Api::start(&pool).await;
    let a = api.tenant("acme").await;
    let b = api.tenant("globex").await;
    api.job_type("acme", "echo", "echo").await;
    api.job_type("globex", "globex-only", "fatal").await;

    let (status, job) = json(
        api.post("/v1/jobs", &b, json!({"type": "globex-only"}))
            .await,
    )
    .await;
    assert_eq!(status, 201);
    let b_job = job["id"].as_i64().unwrap();
    let (_, missing) = json(api.get("/v1/jobs/999999", &a).await).await;

    // Reading, cancelling, retrying B's job: the very same 404 as a missing job (the
    // message only differs by the id).
    let (status, body) = json(api.get(&format!("/v1/jobs/{b_job}"), &a).await).await;
    assert_eq!(status, 404);
    assert_eq!(
        error_of(&body).1.replace(&b_job.to_string(), "N"),
        error_of(&missing).1.replace("999999", "N")
    );
    for action in ["cancel", "retry"] {
        let (status, body) = json(
            api.post(&format!("/v1/jobs/{b_job}/{action}"), &a, json!({}))
                .await,
        )
        .await;
        assert_eq!(status, 404, "{action}: {body}");
    }
    let (status, list) = json(api.get("/v1/jobs", &a).await).await;
    assert_eq!(status, 200);
    assert_eq!(list["jobs"].as_array().unwrap().len(), 0, "{list}");

    // B's job type and component do not exist for A.
    let (status, body) = json(
        api.post("/v1/jobs", &a, json!({"type": "globex-only"}))
            .await,
    )
    .await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = json(
        api.req(Method::PUT, "/v1/job-types/mine", &a)
            .json(&json!({"component": "fatal"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 404, "{body}");
    let (_, components) = json(api.get("/v1/components", &a).await).await;
    let names: Vec<&str> = components
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo"]);
    let (_, types) = json(api.get("/v1/job-types", &a).await).await;
    assert_eq!(types.as_array().unwrap().len(), 1, "{types}");

    // A tenant token cannot pick another tenant.
    let response = api
        .req(Method::GET, &format!("/v1/jobs/{b_job}"), &a)
        .header("x-sluice-tenant", "globex")
        .send()
        .await
        .unwrap();
    let (status, body) = json(response).await;
    assert_eq!(status, 403, "{body}");

    // B's job is untouched.
    let (_, job) = json(api.get(&format!("/v1/jobs/{b_job}"), &b).await).await;
    assert_eq!(job["state"], "pending");
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn admin_tokens_act_for_any_tenant(pool: PgPool) {
    let api = Api::start(&pool).await;
    let b = api.tenant("globex").await;
    api.job_type("globex", "echo", "echo").await;
    api.store.create_tenant("ops").await.unwrap();
    let stored_admin = api
        .store
        .create_token("ops", true, None)
        .await
        .unwrap()
        .token;
    let (_, job) = json(api.post("/v1/jobs", &b, json!({"type": "echo"})).await).await;
    let id = job["id"].as_i64().unwrap();

    for admin in [ENV_ADMIN_TOKEN, stored_admin.as_str()] {
        let as_globex = |method: Method, path: String| {
            api.req(method, &path, admin)
                .header("x-sluice-tenant", "globex")
        };
        let (status, job) = json(
            as_globex(Method::GET, format!("/v1/jobs/{id}"))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!((status, job["id"].as_i64()), (200, Some(id)), "{job}");
        let (status, list) = json(
            as_globex(Method::GET, "/v1/jobs".into())
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(list["jobs"].as_array().unwrap().len(), 1);
        // Without the header an admin acts for its own tenant, where the job is not.
        let (status, _) = json(api.get(&format!("/v1/jobs/{id}"), admin).await).await;
        assert_eq!(status, 404);
        // An unknown tenant is a 404 naming it.
        let (status, body) = json(
            api.req(Method::GET, "/v1/jobs", admin)
                .header("x-sluice-tenant", "nobody")
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, 404, "{body}");
    }
    let (status, job) = json(
        api.req(
            Method::POST,
            &format!("/v1/jobs/{id}/cancel"),
            ENV_ADMIN_TOKEN,
        )
        .header("x-sluice-tenant", "globex")
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!((status, job["state"].as_str()), (200, Some("cancelled")));
    let (status, job) = json(
        api.req(Method::POST, &format!("/v1/jobs/{id}/retry"), &stored_admin)
            .header("x-sluice-tenant", "globex")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, job["state"].as_str()), (200, Some("pending")));
}
