//! Issue #20's scenarios about who may see and do what: (g) tenant B's session gets a
//! 404 page for tenant A's job, never lists it, and cannot act on it; (i) a read-only
//! token's session renders no action form and has its POSTs (with its own valid CSRF
//! token) refused 403, leaving the job as it was.

use serde_json::json;
use sluice_store::{JobState, NewJob};
use sqlx::PgPool;

use super::browser::Browser;
use super::world::{A, B, Dashboard};

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn other_tenants_and_read_only_sessions_see_and_change_nothing(pool: PgPool) {
    let dash = Dashboard::start(&pool).await;
    let a_dead = dash
        .fixture
        .jobs()
        .dead(NewJob::new(A, "fatal", b"{}".to_vec()), "failed on purpose")
        .await;
    let a_pending = dash.enqueue(A, "echo", json!({ "tenant": A })).await;
    let b_job = dash.enqueue(B, "echo", json!({ "tenant": B })).await;
    let browser = Browser::start(&dash.api.base, "sessions").await;

    // (g) Tenant B: A's job page is a 404 page without the job; B's list holds B's job
    // only, and filtering by A's id finds nothing; a cancel of A's job with B's own
    // CSRF token is a 404 too, and the job stays pending; the admin-only workers page
    // is a 403 page for a tenant.
    browser.sign_in(&dash.token_b).await;
    let a_page = format!("/ui/jobs/{a_dead}");
    browser.goto(&a_page).await;
    assert_eq!(browser.count("#job-state").await, 0, "B sees A's job");
    browser.screenshot("01-b-on-a-job").await;
    let (status, _) = browser.fetch("GET", &a_page, &[]).await;
    assert_eq!(status, 404);
    browser.goto("/ui/jobs").await;
    let listed = browser.listed_jobs().await;
    assert_eq!(listed, [b_job], "B's list");
    browser.screenshot("02-b-jobs").await;
    browser.goto(&format!("/ui/jobs?id={a_dead}")).await;
    assert_eq!(browser.listed_jobs().await, Vec::<i64>::new());
    let csrf = browser.csrf().await;
    let cancel = format!("/ui/jobs/{a_pending}/cancel");
    let (status, _) = browser
        .fetch("POST", &cancel, &[("csrf", csrf.as_str())])
        .await;
    assert_eq!(status, 404);
    assert_eq!(dash.state(a_pending).await, JobState::Pending);
    let (status, _) = browser.fetch("GET", "/ui/workers", &[]).await;
    assert_eq!(status, 403, "a tenant on the workers page");
    browser.sign_out().await;

    // (i) A read-only token of A: the dead job's page and the jobs list carry no action
    // form; a retry and a bulk retry with the session's own CSRF token are 403.
    let read_only = dash.read_only_token(A).await;
    browser.sign_in(&read_only).await;
    browser.goto(&a_page).await;
    assert_eq!(browser.text_of("#job-state").await, "dead");
    assert_eq!(browser.count("form.action").await, 0, "job page");
    assert_eq!(browser.count("#retry").await, 0);
    browser.screenshot("03-read-only-job").await;
    browser.goto("/ui/jobs").await;
    let mut listed = browser.listed_jobs().await;
    listed.sort();
    assert_eq!(listed, [a_dead, a_pending]);
    assert_eq!(browser.count("form.action").await, 0, "jobs list");
    browser.screenshot("04-read-only-jobs").await;
    let csrf = browser.csrf().await;
    let retry = format!("{a_page}/retry");
    let (status, body) = browser
        .fetch("POST", &retry, &[("csrf", csrf.as_str())])
        .await;
    assert_eq!(status, 403, "{body}");
    let id = a_dead.to_string();
    let bulk = [
        ("csrf", csrf.as_str()),
        ("action", "retry"),
        ("ids", id.as_str()),
    ];
    let (status, body) = browser.fetch("POST", "/ui/jobs/bulk", &bulk).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(dash.state(a_dead).await, JobState::Dead);
    browser.goto(&a_page).await;
    assert_eq!(browser.text_of("#job-state").await, "dead");
    browser.close().await;
}
