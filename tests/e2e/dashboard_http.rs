//! The dashboard (`/ui`) over plain HTTP, without a browser: what a hostile tenant or a
//! careless client could try. Sign-in and the cookie's attributes, sessions ending on
//! sign-out and on token revocation, CSRF, read-only sessions, tenant isolation on every
//! page and action, HTML escaping of tenant-controlled text, admin-only pages, and the
//! security headers. The browser tests (`dashboard`) cover the pages in Chromium.

mod durable_page;
mod odd_input;
mod usage_page;

use reqwest::StatusCode;
use reqwest::redirect::Policy;
use sluice_store::{JobState, NewJob};
use sqlx::PgPool;

use crate::support::http::{Api, ENV_ADMIN_TOKEN};

/// A browser-like client of the test server: no automatic redirects, one cookie.
struct Browser {
    base: String,
    client: reqwest::Client,
    cookie: Option<String>,
    csrf: Option<String>,
}

impl Browser {
    fn new(api: &Api) -> Browser {
        crate::support::install_tls_provider();
        Browser {
            base: api.base.clone(),
            client: reqwest::Client::builder()
                .redirect(Policy::none())
                .build()
                .unwrap(),
            cookie: None,
            csrf: None,
        }
    }

    /// Signs in with `token`; returns the sign-in answer.
    async fn sign_in(&mut self, token: &str) -> reqwest::Response {
        let response = self
            .client
            .post(format!("{}/ui/login", self.base))
            .header("content-type", FORM)
            .body(form_body(&[("token", token)]))
            .send()
            .await
            .unwrap();
        if let Some(set) = response.headers().get("set-cookie") {
            let set = set.to_str().unwrap().to_owned();
            self.cookie = Some(set.split(';').next().unwrap().to_owned());
        }
        response
    }

    /// GETs `path` with this session's cookie; the whole answer.
    async fn get_raw(&self, path: &str) -> reqwest::Response {
        let mut request = self.client.get(format!("{}{path}", self.base));
        if let Some(cookie) = &self.cookie {
            request = request.header("cookie", cookie);
        }
        request.send().await.unwrap()
    }

    async fn get(&mut self, path: &str) -> (StatusCode, String) {
        let response = self.get_raw(path).await;
        let status = response.status();
        let body = response.text().await.unwrap();
        if let Some(csrf) = hidden_value(&body, "csrf") {
            self.csrf = Some(csrf);
        }
        (status, body)
    }

    /// POSTs `fields` (plus this session's CSRF token when `with_csrf`).
    async fn post(
        &self,
        path: &str,
        fields: &[(&str, &str)],
        with_csrf: bool,
    ) -> (StatusCode, String) {
        let response = self.post_form(path, fields, with_csrf).await;
        (response.status(), response.text().await.unwrap())
    }

    /// POSTs `fields` with this session's CSRF token; the whole answer.
    async fn post_raw(&self, path: &str, fields: &[(&str, &str)]) -> reqwest::Response {
        self.post_form(path, fields, true).await
    }

    async fn post_form(
        &self,
        path: &str,
        fields: &[(&str, &str)],
        with_csrf: bool,
    ) -> reqwest::Response {
        let mut form: Vec<(&str, &str)> = fields.to_vec();
        if with_csrf {
            form.push(("csrf", self.csrf.as_deref().expect("a page was read first")));
        }
        let mut request = self
            .client
            .post(format!("{}{path}", self.base))
            .header("content-type", FORM)
            .body(form_body(&form));
        if let Some(cookie) = &self.cookie {
            request = request.header("cookie", cookie);
        }
        request.send().await.unwrap()
    }
}

const FORM: &str = "application/x-www-form-urlencoded";

/// `fields` as an HTML form body.
fn form_body(fields: &[(&str, &str)]) -> String {
    let mut body = form_urlencoded::Serializer::new(String::new());
    body.extend_pairs(fields);
    body.finish()
}

/// The value of the first hidden field `name` in `html`.
fn hidden_value(html: &str, name: &str) -> Option<String> {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html.find(&marker)? + marker.len();
    Some(html[start..start + html[start..].find('"')?].to_owned())
}

async fn dead_job(api: &Api, tenant: &str, payload: &str) -> i64 {
    let job = NewJob::new(tenant, "echo", payload.as_bytes().to_vec());
    crate::support::jobs::Jobs::new(&api.store)
        .dead(job, "boom <b>bold</b>")
        .await
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn sign_in_sets_a_strict_http_only_cookie_and_sign_out_ends_the_session(pool: PgPool) {
    let api = Api::start(&pool).await;
    let token = api.tenant("acme").await;
    let mut browser = Browser::new(&api);

    // Without a session every page sends to the sign-in page; an action is refused.
    let (status, _) = browser.get("/ui/jobs").await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(
        browser.post("/ui/jobs/1/retry", &[], false).await.0,
        StatusCode::UNAUTHORIZED
    );

    let refused = browser.sign_in("not-a-token").await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert!(refused.headers().get("set-cookie").is_none());
    assert!(
        refused
            .text()
            .await
            .unwrap()
            .contains("Unknown or revoked token")
    );

    let signed = browser.sign_in(&token).await;
    assert_eq!(signed.status(), StatusCode::SEE_OTHER);
    let cookie = signed.headers()["set-cookie"].to_str().unwrap().to_owned();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/ui", "Max-Age="] {
        assert!(
            cookie.contains(attribute),
            "{attribute} missing from {cookie}"
        );
    }
    assert!(!cookie.contains("Secure"), "plain HTTP: {cookie}");
    assert!(
        !cookie.contains(&token),
        "the token itself must not travel in the cookie"
    );
    let (status, body) = browser.get("/ui/overview").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("acme"));

    // Behind a TLS proxy the cookie is Secure.
    let secure = browser
        .client
        .post(format!("{}/ui/login", api.base))
        .header("x-forwarded-proto", "https")
        .header("content-type", FORM)
        .body(form_body(&[("token", token.as_str())]))
        .send()
        .await
        .unwrap();
    assert!(
        secure.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .contains("; Secure")
    );

    // Sign-out without the CSRF token is refused; with it, the cookie stops working.
    assert_eq!(
        browser.post("/ui/logout", &[], false).await.0,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        browser.post("/ui/logout", &[], true).await.0,
        StatusCode::SEE_OTHER
    );
    assert_eq!(browser.get("/ui/overview").await.0, StatusCode::SEE_OTHER);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn revoking_the_token_ends_its_sessions_at_once(pool: PgPool) {
    let api = Api::start(&pool).await;
    api.store.create_tenant("acme").await.unwrap();
    let minted = api
        .store
        .create_token("acme", false, Some("ui"))
        .await
        .unwrap();
    let mut browser = Browser::new(&api);
    browser.sign_in(&minted.token).await;
    assert_eq!(browser.get("/ui/jobs").await.0, StatusCode::OK);
    api.store
        .revoke_token("acme", minted.record.id)
        .await
        .unwrap();
    assert_eq!(browser.get("/ui/jobs").await.0, StatusCode::SEE_OTHER);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn actions_need_this_sessions_csrf_token(pool: PgPool) {
    let api = Api::start(&pool).await;
    let token = api.tenant("acme").await;
    api.job_type("acme", "echo", "echo").await;
    let id = dead_job(&api, "acme", "{}").await;
    let mut browser = Browser::new(&api);
    browser.sign_in(&token).await;
    browser.get(&format!("/ui/jobs/{id}")).await;

    let path = format!("/ui/jobs/{id}/retry");
    let (status, body) = browser.post(&path, &[], false).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(body.contains("CSRF"), "{body}");
    let (status, _) = browser.post(&path, &[("csrf", "forged")], false).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // Another session's token does not work here either.
    let mut other = Browser::new(&api);
    other.sign_in(&token).await;
    other.get("/ui/jobs").await;
    let foreign = other.csrf.clone().unwrap();
    assert_ne!(Some(&foreign), browser.csrf.as_ref());
    assert_eq!(
        browser.post(&path, &[("csrf", &foreign)], false).await.0,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        api.store.get(None, id).await.unwrap().unwrap().state,
        JobState::Dead
    );

    assert_eq!(
        browser.post(&path, &[], true).await.0,
        StatusCode::SEE_OTHER
    );
    assert_eq!(
        api.store.get(None, id).await.unwrap().unwrap().state,
        JobState::Pending
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_read_only_session_sees_no_action_and_every_action_is_refused(pool: PgPool) {
    let api = Api::start(&pool).await;
    api.tenant("acme").await;
    api.job_type("acme", "echo", "echo").await;
    let id = dead_job(&api, "acme", "{}").await;
    let read_only = api
        .store
        .create_token_with("acme", false, true, Some("viewer"))
        .await
        .unwrap();
    let mut browser = Browser::new(&api);
    browser.sign_in(&read_only.token).await;
    for page in [
        "/ui/overview",
        "/ui/jobs",
        &format!("/ui/jobs/{id}"),
        "/ui/types",
        "/ui/schedules",
    ] {
        let (status, body) = browser.get(page).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        assert!(
            !body.contains("class=\"action"),
            "{page} shows an action form"
        );
        assert!(body.contains("read-only"), "{page} does not say read-only");
    }
    for (path, fields) in [
        (format!("/ui/jobs/{id}/retry"), vec![]),
        (format!("/ui/jobs/{id}/cancel"), vec![]),
        (
            "/ui/jobs/bulk".to_owned(),
            vec![("action", "delete"), ("ids", "1")],
        ),
        ("/ui/schedules/nightly/run".to_owned(), vec![]),
    ] {
        let (status, _) = browser.post(&path, &fields, true).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}");
    }
    assert_eq!(
        api.store.get(None, id).await.unwrap().unwrap().state,
        JobState::Dead
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn another_tenants_jobs_are_not_found_on_any_page_or_action(pool: PgPool) {
    let api = Api::start(&pool).await;
    let a = api.tenant("acme").await;
    let b = api.tenant("globex").await;
    api.job_type("acme", "echo", "echo").await;
    let a_job = dead_job(&api, "acme", r#"{"secret":"acme-only"}"#).await;
    let mut browser = Browser::new(&api);
    browser.sign_in(&b).await;

    let (status, body) = browser.get(&format!("/ui/jobs/{a_job}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(!body.contains("acme-only"));
    let (_, missing) = browser.get("/ui/jobs/999999").await;
    assert_eq!(
        body.replace(&format!("Job {a_job} "), "Job N "),
        missing.replace("Job 999999 ", "Job N "),
        "another tenant's job must look exactly like a missing one"
    );
    let (_, list) = browser.get("/ui/jobs").await;
    assert!(!list.contains(&format!("data-job-id=\"{a_job}\"")));
    let (_, overview) = browser.get("/ui/overview").await;
    assert!(!overview.contains("echo"), "B's overview shows A's type");
    for action in ["retry", "cancel"] {
        let path = format!("/ui/jobs/{a_job}/{action}");
        assert_eq!(
            browser.post(&path, &[], true).await.0,
            StatusCode::NOT_FOUND,
            "{action}"
        );
    }
    let ids = a_job.to_string();
    let (status, body) = browser
        .post(
            "/ui/jobs/bulk",
            &[("action", "delete"), ("ids", &ids)],
            true,
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    // A bulk action over "everything matching" acts on B's jobs only.
    let (status, _) = browser
        .post(
            "/ui/jobs/bulk",
            &[
                ("action", "delete"),
                ("scope", "matching"),
                ("confirmed", "1"),
            ],
            true,
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(
        api.store.get(None, a_job).await.unwrap().unwrap().state,
        JobState::Dead
    );

    // Tenant pages are for admins; a tenant session cannot switch tenants.
    assert_eq!(browser.get("/ui/workers").await.0, StatusCode::FORBIDDEN);
    assert_eq!(browser.get("/ui/tenants").await.0, StatusCode::FORBIDDEN);
    assert_eq!(
        browser
            .post("/ui/tenant", &[("tenant", "acme")], true)
            .await
            .0,
        StatusCode::FORBIDDEN
    );
    let (_, list) = browser.get("/ui/jobs").await;
    assert!(!list.contains(&format!("data-job-id=\"{a_job}\"")));

    // An admin acts for any tenant after switching.
    let mut admin = Browser::new(&api);
    admin.sign_in(ENV_ADMIN_TOKEN).await;
    assert_eq!(admin.get("/ui/tenants").await.0, StatusCode::OK);
    assert_eq!(
        admin
            .post("/ui/tenant", &[("tenant", "acme")], true)
            .await
            .0,
        StatusCode::SEE_OTHER
    );
    let (status, body) = admin.get(&format!("/ui/jobs/{a_job}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("acme-only"));
    assert_eq!(
        admin
            .post("/ui/tenant", &[("tenant", "nope")], true)
            .await
            .0,
        StatusCode::NOT_FOUND
    );
    let _ = a;
}

/// An admin pauses and resumes a tenant from the tenants page (CSRF-checked); a tenant's
/// session cannot, and an unknown tenant is a 404.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn an_admin_pauses_and_resumes_a_tenant_and_a_tenant_cannot(pool: PgPool) {
    let api = Api::start(&pool).await;
    let acme = api.tenant("acme").await;
    let paused = || async { api.store.get_tenant("acme").await.unwrap().unwrap().paused };
    let mut tenant = Browser::new(&api);
    tenant.sign_in(&acme).await;
    tenant.get("/ui/overview").await;
    let refused = tenant.post("/ui/tenants/acme/pause", &[], true).await.0;
    assert_eq!(refused, StatusCode::FORBIDDEN);
    let mut admin = Browser::new(&api);
    admin.sign_in(ENV_ADMIN_TOKEN).await;
    let (_, page) = admin.get("/ui/tenants").await;
    assert!(page.contains("action=\"/ui/tenants/acme/pause\""), "{page}");
    let no_csrf = admin.post("/ui/tenants/acme/pause", &[], false).await.0;
    assert_eq!(no_csrf, StatusCode::FORBIDDEN);
    assert!(!paused().await, "refused requests change nothing");
    let done = admin.post("/ui/tenants/acme/pause", &[], true).await.0;
    assert_eq!(done, StatusCode::SEE_OTHER);
    assert!(paused().await);
    let (_, page) = admin.get("/ui/tenants").await;
    assert!(
        page.contains("action=\"/ui/tenants/acme/resume\""),
        "{page}"
    );
    let done = admin.post("/ui/tenants/acme/resume", &[], true).await.0;
    assert_eq!(done, StatusCode::SEE_OTHER);
    assert!(!paused().await);
    let unknown = admin.post("/ui/tenants/nobody/pause", &[], true).await.0;
    assert_eq!(unknown, StatusCode::NOT_FOUND);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn tenant_text_is_escaped_and_pages_carry_security_headers(pool: PgPool) {
    let api = Api::start(&pool).await;
    let token = api.tenant("acme").await;
    api.job_type("acme", "echo", "echo").await;
    let id = dead_job(&api, "acme", r#"{"name":"<script>alert(1)</script>"}"#).await;
    let mut browser = Browser::new(&api);
    browser.sign_in(&token).await;
    let response = browser
        .client
        .get(format!("{}/ui/jobs/{id}", api.base))
        .header("cookie", browser.cookie.clone().unwrap())
        .send()
        .await
        .unwrap();
    let headers = response.headers().clone();
    let body = response.text().await.unwrap();
    assert!(
        !body.contains("<script>alert(1)"),
        "payload rendered unescaped"
    );
    assert!(body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!body.contains("<b>bold</b>") && body.contains("&lt;b&gt;bold"));
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(headers["x-frame-options"], "DENY");
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );

    // A bad filter is a 400 naming the field, with the form to fix it; unknown pages
    // are 404 pages.
    let (status, body) = browser.get("/ui/jobs?priority=high&payload=%7Bnope").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body.contains("priority: ") && body.contains("payload: "),
        "{body}"
    );
    assert_eq!(browser.get("/ui/nope").await.0, StatusCode::NOT_FOUND);
    assert_eq!(browser.get("/ui/jobs/abc").await.0, StatusCode::NOT_FOUND);
    let (status, css) = browser.get("/ui/assets/ui.css").await;
    assert_eq!(status, StatusCode::OK);
    assert!(css.contains("--accent"));
}
