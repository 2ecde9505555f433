//! The overview's live refresh, and the job types and schedules pages in the browser: a
//! tenant watches the overview update by itself (and stop while paused), switches a type
//! to another uploaded version of its component after the confirmation, and runs and
//! pauses a cron schedule.

use sluice_store::{NewComponent, NewSchedule};
use sqlx::PgPool;

use super::browser::Browser;
use super::world::{A, Dashboard, SHORT};
use crate::support::sample;

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_tenant_switches_a_type_version_and_runs_and_pauses_a_schedule(pool: PgPool) {
    let dash = Dashboard::start(&pool).await;
    let store = &dash.api.store;
    let v1 = store
        .get_job_type(A, "echo")
        .await
        .unwrap()
        .unwrap()
        .component_id;
    // A second version of the `echo` component (other bytes, so a new version).
    let bytes = std::fs::read(sample("fatal")).unwrap();
    let contract = sluice_sandbox::contract_of(&bytes).unwrap().minor();
    let v2 = store
        .put_component(&NewComponent {
            tenant: A.into(),
            name: "echo".into(),
            version: Some("2".into()),
            bytes,
            contract,
        })
        .await
        .unwrap()
        .id;
    store
        .create_schedule(&NewSchedule::new(A, "nightly", "0 3 * * *", "echo"))
        .await
        .unwrap();
    let browser = Browser::start(&dash.api.base, "config").await;
    browser.sign_in(&dash.token_a).await;

    // The overview refreshes itself every 2 s (no reload here), and not while paused.
    let pending = "#state-counts td[data-state=pending]";
    browser.wait_for_text(pending, "0", SHORT).await;
    dash.enqueue(A, "echo", serde_json::json!({})).await;
    browser.wait_for_text(pending, "1", SHORT).await;
    browser.click("#live-toggle").await;
    dash.enqueue(A, "echo", serde_json::json!({})).await;
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    assert_eq!(browser.text_of(pending).await, "1", "a paused page changed");
    browser.click("#live-toggle").await;
    browser.wait_for_text(pending, "2", SHORT).await;

    // Types: the echo row offers both versions; switching asks first, then switches.
    browser.goto("/ui/types").await;
    browser.screenshot("01-types").await;
    let row = "table#types tr[data-type=echo]";
    browser
        .set_field(
            &format!("{row} form.switch"),
            "component_id",
            &v2.to_string(),
        )
        .await;
    browser.click(&format!("{row} form.switch button")).await;
    browser.wait_for("#switch-target", SHORT).await;
    let target = browser.text_of("#switch-target").await;
    assert!(target.starts_with("echo 2"), "{target}");
    browser.screenshot("02-switch-confirm").await;
    assert_eq!(
        store
            .get_job_type(A, "echo")
            .await
            .unwrap()
            .unwrap()
            .component_id,
        v1,
        "nothing switches before the confirmation"
    );
    browser.click("#confirm-form button#confirm").await;
    browser.wait_for_path("/ui/types", SHORT).await;
    let now = store.get_job_type(A, "echo").await.unwrap().unwrap();
    assert_eq!(now.component_id, v2);
    assert!(browser.text_of(row).await.contains("echo 2"));

    // Schedules: run now enqueues one job (the next slot stays); pause shows it paused.
    browser.goto("/ui/schedules").await;
    browser.screenshot("03-schedules").await;
    let before = store.get_schedule(A, "nightly").await.unwrap().unwrap();
    let schedule = "table#schedules tr[data-schedule=nightly]";
    browser
        .click(&format!("{schedule} button[data-action=run]"))
        .await;
    browser.wait_for("#schedule-done", SHORT).await;
    let done = browser.text_of("#schedule-done").await;
    let job: i64 = done
        .rsplit("job ")
        .next()
        .and_then(|id| id.trim().parse().ok())
        .unwrap_or_else(|| panic!("no job id in {done:?}"));
    let enqueued = store.get(Some(A), job).await.unwrap().unwrap();
    assert_eq!(enqueued.job_type, "echo");
    let after = store.get_schedule(A, "nightly").await.unwrap().unwrap();
    assert_eq!(
        after.next_slot, before.next_slot,
        "run now leaves the slots alone"
    );
    browser
        .click(&format!("{schedule} button[data-action=pause]"))
        .await;
    browser
        .wait_for_text("#schedule-done", "schedule nightly paused", SHORT)
        .await;
    assert!(
        store
            .get_schedule(A, "nightly")
            .await
            .unwrap()
            .unwrap()
            .paused
    );
    assert!(browser.text_of(schedule).await.contains("paused"));
    browser.screenshot("04-schedule-paused").await;
    browser.close().await;
}
