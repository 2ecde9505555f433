//! The real HTTP API (`sluice_http::serve::app`) served in-process on an ephemeral port over
//! the test's own database, with helpers to create tenants, tokens and job types.
#![allow(dead_code)]

use reqwest::{Method, RequestBuilder, Response};
use sluice_http::app_state::{AppState, ServeConfig};
use sluice_http::serve;
use sluice_sandbox::{Sandbox, SandboxConfig};
use sluice_store::{Store, TenantLimits};
use sqlx::PgPool;
use tokio::sync::oneshot;

/// The `SLUICE_ADMIN_TOKEN` every test server is started with.
pub const ENV_ADMIN_TOKEN: &str = "test-admin-token-0123456789abcdef0123456789abcdef";

pub struct Api {
    pub base: String,
    pub client: reqwest::Client,
    pub store: Store,
    pool: PgPool,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for Api {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Api {
    /// Serves the API over `pool` with the default settings and [`ENV_ADMIN_TOKEN`].
    pub async fn start(pool: &PgPool) -> Api {
        Self::start_with(
            pool,
            ServeConfig {
                admin_token: Some(ENV_ADMIN_TOKEN.into()),
                ..ServeConfig::default()
            },
        )
        .await
    }

    pub async fn start_with(pool: &PgPool, config: ServeConfig) -> Api {
        let store = Store::new(pool.clone());
        store.create_tenant("default").await.unwrap();
        let sandbox = Sandbox::new(SandboxConfig {
            max_concurrency: 1,
            guest_threads: 1,
            ..SandboxConfig::default()
        })
        .expect("start the sandbox");
        let app = serve::app(AppState::new(store.clone(), sandbox, config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(serve::serve(listener, app, async {
            let _ = stopped.await;
        }));
        Api {
            base,
            client: super::reqwest_client(),
            store,
            pool: pool.clone(),
            stop: Some(stop),
        }
    }

    /// A request with `token` as bearer (none when empty).
    pub fn req(&self, method: Method, path: &str, token: &str) -> RequestBuilder {
        let builder = self.client.request(method, format!("{}{path}", self.base));
        if token.is_empty() {
            builder
        } else {
            builder.bearer_auth(token)
        }
    }

    pub async fn get(&self, path: &str, token: &str) -> Response {
        self.req(Method::GET, path, token).send().await.unwrap()
    }

    pub async fn post(&self, path: &str, token: &str, body: serde_json::Value) -> Response {
        self.req(Method::POST, path, token)
            .json(&body)
            .send()
            .await
            .unwrap()
    }

    /// Creates `tenant` and returns a (non-admin) token for it.
    pub async fn tenant(&self, tenant: &str) -> String {
        self.store.create_tenant(tenant).await.unwrap();
        self.store
            .create_token(tenant, false, Some("test"))
            .await
            .unwrap()
            .token
    }

    /// Registers job type `job_type` of `tenant`, running the sample component `sample`
    /// (stored directly: validation through the API is tested separately).
    pub async fn job_type(&self, tenant: &str, job_type: &str, sample: &str) {
        crate::support::Fixture::new(&self.pool)
            .tenant(tenant)
            .job_type(job_type, sample)
            .await;
    }

    pub async fn set_limits(&self, tenant: &str, limits: TenantLimits) {
        self.store.set_tenant_limits(tenant, &limits).await.unwrap();
    }
}

/// Status and JSON body of a response.
pub async fn json(response: Response) -> (u16, serde_json::Value) {
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("response {status} is not JSON ({e}): {text:?}"));
    (status, body)
}

/// Asserts the API's error shape and returns (code, message).
pub fn error_of(body: &serde_json::Value) -> (String, String) {
    let code = body["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("not an error body: {body}"));
    let message = body["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("error without a message: {body}"));
    assert_eq!(
        body.as_object().unwrap().len(),
        1,
        "nothing but `error` in an error body: {body}"
    );
    (code.to_owned(), message.to_owned())
}

/// Jobs stored for `tenant`.
pub async fn job_count(pool: &PgPool, tenant: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM sluice.jobs WHERE tenant = $1")
        .bind(tenant)
        .fetch_one(pool)
        .await
        .unwrap()
}
