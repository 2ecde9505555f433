//! Issue #20's scenarios with a long-running `sluice worker`: (j) while it runs a
//! `spin-forever` job, an admin session sees it on the workers page and both tenants on
//! the tenants page (no token values); (f) the tenant cancels the running job from its
//! page and watches it end `cancelled`.

use std::time::Duration;

use serde_json::json;
use sluice_store::JobState;
use sqlx::PgPool;

use super::browser::Browser;
use super::world::{A, B, Dashboard, SHORT};
use crate::support::worker_process::WorkerProcess;

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn an_admin_sees_the_fleet_and_a_tenant_cancels_a_running_job(pool: PgPool) {
    let dash = Dashboard::start(&pool).await;
    let spin = dash.enqueue(A, "spin", json!({})).await;
    let worker = WorkerProcess::spawn(&dash.sluice, "dash-worker", &["--concurrency", "1"]);
    let browser = Browser::start(&dash.api.base, "running").await;

    // The job starts (the worker compiles the component first).
    browser.sign_in(&dash.token_a).await;
    let page = format!("/ui/jobs/{spin}");
    browser.goto(&page).await;
    let started = Duration::from_secs(30);
    browser
        .wait_for_text_reloading("#job-state", "running", started)
        .await;
    browser.screenshot("01-running").await;
    browser.sign_out().await;

    // (j) The admin's workers and tenants pages.
    browser.sign_in(dash.admin_token()).await;
    browser.goto("/ui/workers").await;
    let workers = browser.text_of("table#workers").await;
    assert!(workers.contains(&worker.id), "{workers}");
    browser.screenshot("02-admin-workers").await;
    browser.goto("/ui/tenants").await;
    let tenants = browser.text_of("table#tenants").await;
    assert!(tenants.contains(A) && tenants.contains(B), "{tenants}");
    let page_text = browser.body_text().await;
    assert!(
        !page_text.contains(&dash.token_a),
        "a token value on the tenants page"
    );
    browser.screenshot("03-admin-tenants").await;
    browser.sign_out().await;

    // (f) The tenant cancels it from its page.
    browser.sign_in(&dash.token_a).await;
    browser.goto(&page).await;
    browser.click("button#cancel").await;
    browser
        .wait_for_text_reloading("#job-state", "cancelled", SHORT)
        .await;
    browser.screenshot("04-cancelled").await;
    assert_eq!(dash.state(spin).await, JobState::Cancelled);
    browser.close().await;
    drop(worker);
}
