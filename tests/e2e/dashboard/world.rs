//! The world the dashboard scenarios start from and the contract-level browser steps:
//! the real API (`sluice_http::serve::app`, which serves `/ui`) in-process on 127.0.0.1 over
//! the test's database, two tenants with the same job types (short backoffs), their
//! tokens, jobs, and the real `sluice worker` binary to run them; plus signing in and
//! out and reading the jobs table by the ids `/tmp/plan/dashboard-contract.md` names.

use std::time::{Duration, Instant};

use serde_json::Value;
use sluice_store::{JobState, JobTypeSpec, NewJob};
use sqlx::PgPool;

use super::browser::Browser;
use crate::support::http::{Api, ENV_ADMIN_TOKEN};
use crate::support::{Fixture, Sluice};

/// The tenant whose jobs the scenarios work on, and the other one.
pub const A: &str = "acme";
pub const B: &str = "globex";

/// Attempts of the `flaky` type: a `{"succeed_on": 9}` job is dead after this many.
pub const FLAKY_MAX_ATTEMPTS: usize = 2;

/// How long a page may take to show what the server already holds.
pub const SHORT: Duration = Duration::from_secs(10);

/// `flaky`'s limits: [`FLAKY_MAX_ATTEMPTS`] attempts, 10 ms between them.
pub fn flaky_limits(spec: JobTypeSpec) -> JobTypeSpec {
    JobTypeSpec {
        max_attempts: FLAKY_MAX_ATTEMPTS as i32,
        backoff_base: Some(Duration::from_millis(10)),
        backoff_cap: Some(Duration::from_millis(10)),
        ..spec
    }
}

/// `spin`'s limits: one attempt, a minute before the timeout, and fuel for far longer
/// (the default fuel lasts a spinning guest about a second): it is cancelled long before.
fn spin_limits(spec: JobTypeSpec) -> JobTypeSpec {
    JobTypeSpec {
        max_attempts: 1,
        timeout: Some(Duration::from_secs(60)),
        fuel: Some(1 << 50),
        ..spec
    }
}

pub struct Dashboard {
    pub api: Api,
    pub fixture: Fixture,
    pub sluice: Sluice,
    /// Read-write tokens of [`A`] and [`B`].
    pub token_a: String,
    pub token_b: String,
}

impl Dashboard {
    /// Tenants [`A`] and [`B`], each with job types `flaky`, `fatal`, `echo` and `spin`
    /// (`spin-forever`), and the API serving them.
    pub async fn start(pool: &PgPool) -> Dashboard {
        let fixture = Fixture::new(pool)
            .tenant(A)
            .tenant(B)
            .job_type_with("flaky", "flaky", flaky_limits)
            .job_type("fatal", "fatal")
            .job_type("echo", "echo")
            .job_type_with("spin", "spin-forever", spin_limits)
            .await;
        let api = Api::start(pool).await;
        let token_a = token(&api, A, false).await;
        let token_b = token(&api, B, false).await;
        Dashboard {
            api,
            fixture,
            sluice: Sluice::new(pool),
            token_a,
            token_b,
        }
    }

    /// A read-only token of `tenant`.
    pub async fn read_only_token(&self, tenant: &str) -> String {
        token(&self.api, tenant, true).await
    }

    /// The admin token the server was started with.
    pub fn admin_token(&self) -> &'static str {
        ENV_ADMIN_TOKEN
    }

    /// A pending job of `tenant`; its id.
    pub async fn enqueue(&self, tenant: &str, job_type: &str, payload: Value) -> i64 {
        let job = NewJob::new(tenant, job_type, payload.to_string().into_bytes());
        self.fixture.jobs().pending(job).await
    }

    pub async fn state(&self, id: i64) -> JobState {
        let job = self.api.store.get(None, id).await.unwrap();
        job.unwrap_or_else(|| panic!("job {id} is gone")).state
    }

    /// `sluice worker --drain`: runs every due job (and retries due within 2 s) to the
    /// end, in a blocking thread so the in-process server keeps answering. Its summary.
    pub async fn drain(&self) -> Value {
        let sluice = Sluice {
            url: self.sluice.url.clone(),
            cache: self.sluice.cache.clone(),
        };
        tokio::task::spawn_blocking(move || {
            sluice.json(&["worker", "--drain", "--drain-horizon", "2s"])
        })
        .await
        .expect("the drain thread")
    }
}

async fn token(api: &Api, tenant: &str, read_only: bool) -> String {
    let label = if read_only { "browser-ro" } else { "browser" };
    api.store
        .create_token_with(tenant, false, read_only, Some(label))
        .await
        .unwrap()
        .token
}

impl Browser {
    /// Signs in with `token` on `/ui/login` and expects the overview.
    pub async fn sign_in(&self, token: &str) {
        self.submit_token(token).await;
        self.wait_for_path("/ui/overview", SHORT).await;
        assert!(
            self.session_cookie().await.is_some(),
            "signed in without a sluice_session cookie"
        );
    }

    /// Signs in with a token that must be refused; the `p.error` text shown.
    pub async fn sign_in_refused(&self, token: &str) -> String {
        self.submit_token(token).await;
        self.wait_for("p.error", SHORT).await;
        self.text_of("p.error").await
    }

    async fn submit_token(&self, token: &str) {
        self.goto("/ui/login").await;
        self.type_into("form#login-form input#token", token).await;
        self.click("button#sign-in").await;
    }

    /// `button#sign-out` in `form#logout`; expects the login page.
    pub async fn sign_out(&self) {
        self.click("form#logout button#sign-out").await;
        self.wait_for_path("/ui/login", SHORT).await;
    }

    /// Polls until the current path (without the query) is `path`.
    pub async fn wait_for_path(&self, path: &str, limit: Duration) {
        self.wait_for_url(path, &[], limit).await;
    }

    /// Waits until the page is `path` with every one of `query` in its query string.
    /// For a form that submits to the page it is on, where [`Browser::wait_for_path`]
    /// would be satisfied by the page before the submission.
    pub async fn wait_for_query(&self, path: &str, query: &[&str], limit: Duration) {
        self.wait_for_url(path, query, limit).await;
    }

    async fn wait_for_url(&self, path: &str, query: &[&str], limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let current = self.path().await;
            let (at, q) = current.split_once('?').unwrap_or((current.as_str(), ""));
            if at == path && query.iter().all(|part| q.split('&').any(|p| p == *part)) {
                return;
            }
            if Instant::now() >= deadline {
                self.screenshot("timeout-path").await;
                panic!(
                    "still on {current}, not {path} with {query:?}, after {limit:?}:\n{}",
                    self.body_text().await
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The ids of the rows of `table#jobs`, in page order.
    pub async fn listed_jobs(&self) -> Vec<i64> {
        self.attrs_of("table#jobs tr[data-job-id]", "data-job-id")
            .await
            .iter()
            .map(|id| id.parse().unwrap_or_else(|_| panic!("data-job-id {id:?}")))
            .collect()
    }

    /// The `td.state` text of every row of `table#jobs`.
    pub async fn listed_states(&self) -> Vec<String> {
        self.texts_of("table#jobs tr[data-job-id] td.state").await
    }
}
