//! The web dashboard (`/ui` on `sluice serve`, issue #20) tested in a real browser:
//! headless Chromium driven through chromedriver (`dashboard/browser.rs`,
//! `dashboard/driver.rs`) against the real server in-process on 127.0.0.1 and the
//! real `sluice worker` binary, over a test database each. The scenarios drive the ids
//! and routes of the dashboard contract; a screenshot of each page they visit lands in
//! `target/dashboard-screenshots/` (or `$SLUICE_SCREENSHOT_DIR`).
//!
//! Chromium and chromedriver come from Debian (`scripts/lib/browser.sh`, run by
//! `scripts/test`); without them every test here fails saying so.

mod browser;
mod config_pages;
mod dead_jobs;
mod driver;
mod running;
mod sessions;
mod world;

use crate::support::http::Api;
use browser::{Browser, screenshot_dir};
use sqlx::PgPool;

/// The harness alone, on a route that exists without the dashboard: Chromium renders
/// the health check, an in-page `fetch` reports statuses, and a screenshot is written.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn browser_harness_renders_a_page(pool: PgPool) {
    let api = Api::start(&pool).await;
    let browser = Browser::start(&api.base, "harness").await;
    browser.goto("/healthz").await;
    let body = browser.body_text().await;
    assert!(body.contains(r#""status":"ok""#), "{body}");
    assert_eq!(browser.path().await, "/healthz");
    browser.screenshot("healthz").await;
    let png = std::fs::read(screenshot_dir().join("harness-healthz.png")).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 1000);
    assert_eq!(browser.fetch("GET", "/healthz", &[]).await.0, 200);
    // A POST without the dashboard's fields reaches the server: the API refuses the
    // method on this route.
    assert_eq!(browser.post_without_csrf("/healthz").await.0, 405);
    assert_eq!(browser.session_cookie().await, None);
    browser.close().await;
}
