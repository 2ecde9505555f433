//! A real browser for the dashboard tests: one headless Chromium session with a fresh
//! profile, started through its own `chromedriver` (`driver.rs`, killed on drop) and
//! driven through WebDriver with `fantoccini` (plain HTTP to the local driver, no TLS
//! stack). The helpers poll, never sleep for fixed times, and save a PNG of every page
//! a test asks for in `target/dashboard-screenshots/` (or `$SLUICE_SCREENSHOT_DIR`).
//!
//! Installing Chromium is `scripts/lib/browser.sh`'s job (`scripts/test` runs it): a
//! missing driver fails the test with that instruction, it is never skipped.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};

use super::driver::{CHROMIUM, Driver};

/// The flags every session starts Chromium with (plus a fresh `--user-data-dir`).
const CHROMIUM_ARGS: &[&str] = &[
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,900",
];

/// How often the `wait_for_*` helpers look again.
const POLL: Duration = Duration::from_millis(100);

/// One headless Chromium session pointed at a server's `base` URL.
pub struct Browser {
    client: Option<Client>,
    base: String,
    name: String,
    shots: PathBuf,
    // Fields drop in order: the session, then the driver (and its browser), then the
    // profile directory the browser was using.
    _driver: Driver,
    _profile: Profile,
}

/// A fresh `--user-data-dir`, removed on drop.
struct Profile(PathBuf);

impl Drop for Profile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Browser {
    /// Starts chromedriver and a session; `name` prefixes this test's screenshots.
    pub async fn start(base: &str, name: &str) -> Browser {
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        let profile = std::env::temp_dir().join(format!(
            "sluice-chromium-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&profile);
        std::fs::create_dir_all(&profile).expect("create the Chromium profile dir");
        let driver = Driver::start(&profile);
        let mut args: Vec<String> = CHROMIUM_ARGS.iter().map(|a| a.to_string()).collect();
        args.push(format!("--user-data-dir={}", profile.display()));
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": { "binary": CHROMIUM, "args": args },
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!()
        };
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{}", driver.port))
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "no Chromium session ({e}); chromedriver's log:\n{}",
                    std::fs::read_to_string(&driver.log).unwrap_or_default()
                )
            });
        let shots = screenshot_dir();
        std::fs::create_dir_all(&shots).expect("create the screenshot dir");
        Browser {
            client: Some(client),
            base: base.trim_end_matches('/').to_owned(),
            name: name.to_owned(),
            shots,
            _driver: driver,
            _profile: Profile(profile),
        }
    }

    /// Ends the session (the driver and profile go on drop).
    pub async fn close(mut self) {
        if let Some(client) = self.client.take() {
            let _ = client.close().await;
        }
    }

    fn client(&self) -> &Client {
        self.client.as_ref().expect("the session is open")
    }

    /// The absolute URL of `path` on the server.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn goto(&self, path: &str) {
        let url = self.url(path);
        self.client()
            .goto(&url)
            .await
            .unwrap_or_else(|e| panic!("open {url}: {e}"));
    }

    /// The current URL's path and query (`/ui/jobs?state=dead`).
    pub async fn path(&self) -> String {
        let url = self.client().current_url().await.expect("current URL");
        match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_owned(),
        }
    }

    pub async fn reload(&self) {
        self.client().refresh().await.expect("reload the page");
    }

    /// The visible text of the first element matching `css`, trimmed; panics if none.
    pub async fn text_of(&self, css: &str) -> String {
        match self.try_text_of(css).await {
            Some(text) => text,
            None => panic!("no element {css} on {}", self.path().await),
        }
    }

    async fn try_text_of(&self, css: &str) -> Option<String> {
        let element = self.client().find(Locator::Css(css)).await.ok()?;
        Some(element.text().await.ok()?.trim().to_owned())
    }

    /// The text of every element matching `css` (none: empty).
    pub async fn texts_of(&self, css: &str) -> Vec<String> {
        let mut texts = Vec::new();
        for element in self.all(css).await {
            texts.push(
                element
                    .text()
                    .await
                    .expect("element text")
                    .trim()
                    .to_owned(),
            );
        }
        texts
    }

    /// The `textContent` of every element matching `css`: also what a collapsed
    /// `<details>` holds, which WebDriver's visible text leaves out.
    pub async fn contents_of(&self, css: &str) -> Vec<String> {
        let mut texts = Vec::new();
        for element in self.all(css).await {
            let text = element.prop("textContent").await.expect("textContent");
            texts.push(text.unwrap_or_default());
        }
        texts
    }

    /// `attr` of every element matching `css` that has it.
    pub async fn attrs_of(&self, css: &str, attr: &str) -> Vec<String> {
        let mut values = Vec::new();
        for element in self.all(css).await {
            if let Some(value) = element.attr(attr).await.expect("element attribute") {
                values.push(value);
            }
        }
        values
    }

    /// How many elements match `css`.
    pub async fn count(&self, css: &str) -> usize {
        self.all(css).await.len()
    }

    async fn all(&self, css: &str) -> Vec<fantoccini::elements::Element> {
        self.client()
            .find_all(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("find {css}: {e}"))
    }

    /// Clicks the first element matching `css` (waiting a little for it to appear).
    pub async fn click(&self, css: &str) {
        let element = self.wait_for(css, Duration::from_secs(5)).await;
        element
            .click()
            .await
            .unwrap_or_else(|e| panic!("click {css}: {e}"));
    }

    /// Types `text` into the (cleared) field matching `css`.
    pub async fn type_into(&self, css: &str, text: &str) {
        let element = self.wait_for(css, Duration::from_secs(5)).await;
        element.clear().await.expect("clear the field");
        element
            .send_keys(text)
            .await
            .unwrap_or_else(|e| panic!("type into {css}: {e}"));
    }

    /// Sets the field named `name` of the form matching `form` (input or select).
    pub async fn set_field(&self, form: &str, name: &str, value: &str) {
        let found = self
            .client()
            .execute(
                "const f = document.querySelector(arguments[0]);
                 const el = f && f.elements.namedItem(arguments[1]);
                 if (!el) return false;
                 el.value = arguments[2];
                 return el.value === arguments[2];",
                vec![json!(form), json!(name), json!(value)],
            )
            .await
            .expect("set a form field");
        assert_eq!(
            found,
            json!(true),
            "{form} has no field {name} taking {value:?}"
        );
    }

    /// The first element matching `css`, waiting up to `limit` for it.
    pub async fn wait_for(&self, css: &str, limit: Duration) -> fantoccini::elements::Element {
        let deadline = Instant::now() + limit;
        loop {
            if let Ok(element) = self.client().find(Locator::Css(css)).await {
                return element;
            }
            if Instant::now() >= deadline {
                self.screenshot(&format!("missing-{}", slug(css))).await;
                panic!(
                    "no {css} on {} within {limit:?}:\n{}",
                    self.path().await,
                    self.body_text().await
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Polls until the text of `css` is `expected` (the page as it is: for pages that
    /// change by themselves or just navigated).
    pub async fn wait_for_text(&self, css: &str, expected: &str, limit: Duration) {
        self.poll_text(css, expected, limit, false).await
    }

    /// As [`Browser::wait_for_text`], reloading the page before each look after the
    /// first (for a state that changes on the server, e.g. a job a worker runs).
    pub async fn wait_for_text_reloading(&self, css: &str, expected: &str, limit: Duration) {
        self.poll_text(css, expected, limit, true).await
    }

    async fn poll_text(&self, css: &str, expected: &str, limit: Duration, reload: bool) {
        let deadline = Instant::now() + limit;
        loop {
            let seen = self.try_text_of(css).await;
            if seen.as_deref() == Some(expected) {
                return;
            }
            if Instant::now() >= deadline {
                self.screenshot(&format!("timeout-{}", slug(css))).await;
                panic!(
                    "{css} on {} is {seen:?}, not {expected:?}, after {limit:?}",
                    self.path().await
                );
            }
            tokio::time::sleep(POLL).await;
            if reload {
                self.reload().await;
            }
        }
    }

    /// The whole page's visible text (for failure messages).
    pub async fn body_text(&self) -> String {
        self.try_text_of("body").await.unwrap_or_default()
    }

    /// The value of the `sluice_session` cookie, if the browser holds one.
    pub async fn session_cookie(&self) -> Option<String> {
        let cookies = self.client().get_all_cookies().await.expect("read cookies");
        cookies
            .iter()
            .find(|c| c.name() == "sluice_session")
            .map(|c| c.value().to_owned())
    }

    /// Scrolls the first element matching `css` to the top of the viewport.
    pub async fn scroll_to(&self, css: &str) {
        self.client()
            .execute(
                "document.querySelector(arguments[0]).scrollIntoView();",
                vec![json!(css)],
            )
            .await
            .expect("scroll");
    }

    /// Saves a PNG of the viewport as `<test name>-<name>.png`.
    pub async fn screenshot(&self, name: &str) {
        let png = self.client().screenshot().await.expect("take a screenshot");
        let file = self.shots.join(format!("{}-{name}.png", self.name));
        std::fs::write(&file, png).unwrap_or_else(|e| panic!("write {}: {e}", file.display()));
    }

    /// Runs a `fetch` inside the page (same origin, so with the session cookie) and
    /// returns the answer's status and text; redirects are not followed (status 0).
    pub async fn fetch(&self, method: &str, path: &str, form: &[(&str, &str)]) -> (u16, String) {
        let fields: serde_json::Map<String, Value> = form
            .iter()
            .map(|(k, v)| ((*k).to_owned(), json!(v)))
            .collect();
        let answer = self
            .client()
            .execute(
                "const [method, path, fields] = arguments;
                 const init = { method, credentials: 'same-origin', redirect: 'manual' };
                 if (method !== 'GET') init.body = new URLSearchParams(fields);
                 return fetch(path, init).then(async r => [r.status, await r.text()]);",
                vec![json!(method), json!(path), Value::Object(fields)],
            )
            .await
            .unwrap_or_else(|e| panic!("fetch {method} {path}: {e}"));
        let status = answer[0].as_u64().expect("a status") as u16;
        (status, answer[1].as_str().unwrap_or_default().to_owned())
    }

    /// POSTs an empty form to `path` with the session cookie but no `csrf` field.
    pub async fn post_without_csrf(&self, path: &str) -> (u16, String) {
        self.fetch("POST", path, &[]).await
    }

    /// The session's CSRF token, as the logout form carries it.
    pub async fn csrf(&self) -> String {
        let values = self.attrs_of("form#logout input[name=csrf]", "value").await;
        match values.into_iter().next() {
            Some(csrf) => csrf,
            None => panic!("no form#logout csrf on {}", self.path().await),
        }
    }
}

/// Where screenshots go: `$SLUICE_SCREENSHOT_DIR`, else `target/dashboard-screenshots`
/// under the workspace root.
pub fn screenshot_dir() -> PathBuf {
    match std::env::var_os("SLUICE_SCREENSHOT_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => crate::support::repo_root().join("target/dashboard-screenshots"),
    }
}

/// `tr.attempt` → `tr-attempt`, for file names.
fn slug(css: &str) -> String {
    css.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}
