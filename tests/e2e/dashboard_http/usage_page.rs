//! The usage page (docs/usage.md): the session's tenant's metered runs per hour as a
//! chart and per job type as a table, its daily quotas, and nothing of another tenant.

use reqwest::StatusCode;
use sluice_store::{TenantLimits, UsageCounts, UsageDelta};

use super::Browser;
use crate::support::http::Api;

fn used(tenant: &str, job_type: &str, runs: i64, fuel: i64) -> UsageDelta {
    UsageDelta {
        tenant: tenant.into(),
        job_type: job_type.into(),
        counts: UsageCounts {
            runs,
            fuel,
            ..UsageCounts::default()
        },
    }
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn the_usage_page_charts_the_tenants_runs_and_shows_its_quotas(pool: sqlx::PgPool) {
    let api = Api::start(&pool).await;
    let token = api.tenant("acme").await;
    api.tenant("globex").await;
    api.store
        .record_usage(&[
            used("acme", "resize-image", 12, 34_000),
            used("acme", "send-mail", 3, 500),
            used("globex", "secret-type", 99, 1),
        ])
        .await
        .unwrap();
    let limits = TenantLimits {
        max_attempts_per_day: Some(10_000),
        ..TenantLimits::default()
    };
    api.store.set_tenant_limits("acme", &limits).await.unwrap();
    let mut browser = Browser::new(&api);
    browser.sign_in(&token).await;

    let (status, body) = browser.get("/ui/usage").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("id=\"nav-usage\""), "in the navigation");
    assert!(body.contains("id=\"usage-chart\""), "{body}");
    assert!(
        body.contains("15 runs, 34500 fuel"),
        "one hour's bar: {body}"
    );
    for shown in [
        "data-type=\"resize-image\"",
        "data-type=\"send-mail\"",
        "10,000",
    ] {
        assert!(body.contains(shown), "{shown} missing: {body}");
    }
    assert!(
        !body.contains("secret-type"),
        "another tenant's usage shown"
    );
    let (status, week) = browser.get("/ui/usage?days=7").await;
    assert_eq!(status, StatusCode::OK);
    assert!(week.contains("Last 7 days"), "{week}");
}
