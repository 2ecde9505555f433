//! Issue #20's scenarios for one tenant's dead jobs, in one browser session over jobs a
//! real `sluice worker --drain` ran: (a) signing in, a wrong token first; (b) a dead
//! job's page with its attempts and stored logs; (c) filtering the jobs list; (h) a POST
//! without the CSRF token refused; (d) retrying the dead job until a worker completes
//! it; (e) bulk-retrying every dead job of a type through the confirmation page.

use std::time::Duration;

use serde_json::json;
use sluice_store::{JobState, JobTypeSpec};
use sqlx::PgPool;

use super::browser::Browser;
use super::world::{A, Dashboard, FLAKY_MAX_ATTEMPTS, SHORT, flaky_limits};

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_tenant_signs_in_reads_its_dead_jobs_and_retries_them(pool: PgPool) {
    let dash = Dashboard::start(&pool).await;
    // `flaky` dies after FLAKY_MAX_ATTEMPTS attempts, each with a log; `fatal` dies on
    // attempt 1; `echo` completes.
    let flaky = dash.enqueue(A, "flaky", json!({ "succeed_on": 9 })).await;
    let mut fatal = Vec::new();
    for n in 0..3 {
        fatal.push(dash.enqueue(A, "fatal", json!({ "n": n })).await);
    }
    let echo = dash.enqueue(A, "echo", json!({ "hello": "browser" })).await;
    let (summary, browser) = tokio::join!(dash.drain(), Browser::start(&dash.api.base, "dead"));
    assert_eq!(
        (summary["dead"].as_i64(), summary["completed"].as_i64()),
        (Some(4), Some(1)),
        "{summary}"
    );

    // (a) No session: /ui sends to the login page. A wrong token shows an error and
    // sets no cookie; the tenant's token lands on the overview.
    browser.goto("/ui").await;
    browser.wait_for_path("/ui/login", SHORT).await;
    browser.screenshot("01-login").await;
    let error = browser.sign_in_refused("not-a-token").await;
    assert!(!error.is_empty(), "an empty p.error");
    assert_eq!(browser.session_cookie().await, None);
    browser.screenshot("02-login-refused").await;
    browser.sign_in(&dash.token_a).await;
    assert_eq!(browser.count("#state-counts td[data-state=dead]").await, 1);
    let dead = browser.text_of("#state-counts td[data-state=dead]").await;
    assert!(dead.contains('4'), "dead count {dead:?}");
    assert!(browser.text_of("#dead-count").await.contains('4'));
    browser.screenshot("03-overview").await;

    // (b) The dead job's page: its state, one row per attempt, each attempt's log.
    let page = format!("/ui/jobs/{flaky}");
    browser.goto(&page).await;
    assert_eq!(browser.text_of("#job-state").await, "dead");
    assert_eq!(
        browser.count("table#attempts tr.attempt").await,
        FLAKY_MAX_ATTEMPTS
    );
    let logs = browser.contents_of("pre.attempt-log").await;
    for n in 1..=FLAKY_MAX_ATTEMPTS {
        let line = format!("attempt {n} of 9 failed on purpose");
        assert!(
            logs.iter().any(|log| log.contains(&line)),
            "no {line:?} in {logs:?}"
        );
    }
    browser.screenshot("04-dead-job").await;
    browser
        .scroll_to("h2 + table#attempts, table#attempts")
        .await;
    browser.screenshot("04b-dead-job-attempts").await;

    // (c) The filter form: dead `flaky` jobs are that one job; all dead jobs are the
    // four (not the completed echo); dead `echo` jobs are none.
    browser.goto("/ui/jobs").await;
    browser
        .click("form#filter input[name=state][value=dead]")
        .await;
    browser.set_field("form#filter", "type", "flaky").await;
    browser.click("form#filter #apply-filter").await;
    browser
        .wait_for_query("/ui/jobs", &["state=dead", "type=flaky"], SHORT)
        .await;
    let query = browser.path().await;
    assert!(
        query.contains("state=dead") && query.contains("type=flaky"),
        "{query}"
    );
    assert_eq!(browser.listed_jobs().await, [flaky]);
    assert_eq!(browser.listed_states().await, ["dead"]);
    browser.screenshot("05-jobs-dead-flaky").await;
    browser.goto("/ui/jobs?state=dead").await;
    let mut listed = browser.listed_jobs().await;
    listed.sort();
    let mut expected = [vec![flaky], fatal.clone()].concat();
    expected.sort();
    assert_eq!(listed, expected, "echo job {echo} is completed");
    assert!(browser.listed_states().await.iter().all(|s| s == "dead"));
    browser.goto("/ui/jobs?state=dead&type=echo").await;
    assert_eq!(browser.listed_jobs().await, Vec::<i64>::new());
    browser.screenshot("06-jobs-none").await;

    // (h) A POST with the session cookie but without the CSRF field: 403, job unchanged.
    browser.goto(&page).await;
    let (status, body) = browser.post_without_csrf(&format!("{page}/retry")).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("CSRF"), "{body}");
    assert_eq!(dash.state(flaky).await, JobState::Dead);
    browser.reload().await;
    assert_eq!(browser.text_of("#job-state").await, "dead");

    // (d) Retry from the page (the type now runs `echo`, so the retry succeeds): pending,
    // then completed once a worker ran it.
    let echo_component = dash.fixture.component_id(A, "echo");
    let spec = flaky_limits(JobTypeSpec::new(A, "flaky", echo_component));
    dash.api.store.set_job_type(&spec).await.unwrap();
    browser.click("button#retry").await;
    wait_for_state(&dash, flaky, JobState::Pending).await;
    browser.goto(&page).await;
    browser
        .wait_for_text_reloading("#job-state", "pending", SHORT)
        .await;
    browser.screenshot("07-retried-pending").await;
    let summary = dash.drain().await;
    assert_eq!(summary["completed"].as_i64(), Some(1), "{summary}");
    browser
        .wait_for_text_reloading("#job-state", "completed", SHORT)
        .await;
    browser.screenshot("08-retried-completed").await;

    // (e) Bulk retry of every dead `fatal` job: the confirmation counts them, and after
    // confirming none is dead.
    browser.goto("/ui/jobs?state=dead&type=fatal").await;
    assert_eq!(browser.listed_jobs().await.len(), fatal.len());
    browser.screenshot("09-jobs-dead-fatal").await;
    browser
        .click("form#bulk-matching button[name=action][value=retry]")
        .await;
    browser
        .wait_for_text("#confirm-count", &fatal.len().to_string(), SHORT)
        .await;
    browser.screenshot("10-bulk-confirm").await;
    browser.click("form#confirm-form button#confirm").await;
    for &id in &fatal {
        wait_for_state(&dash, id, JobState::Pending).await;
    }
    browser.goto("/ui/jobs?type=fatal").await;
    let mut listed = browser.listed_jobs().await;
    listed.sort();
    assert_eq!(listed, fatal);
    assert!(browser.listed_states().await.iter().all(|s| s != "dead"));
    browser.screenshot("11-bulk-retried").await;
    browser.close().await;
}

/// Polls the store until job `id` is in `state` (a form POST has landed).
async fn wait_for_state(dash: &Dashboard, id: i64, state: JobState) {
    crate::support::wait_for(
        &format!("job {id} to be {state:?}"),
        Duration::from_secs(5),
        || async { (dash.state(id).await == state).then_some(()) },
    )
    .await
}
