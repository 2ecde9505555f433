//! Odd input to the dashboard (issue #44, 5): a filter `jsonb` cannot hold, a `return`
//! field that is not the list's query, ids that are not ids, `/ui/`. Each is answered
//! with a 4xx or a redirect that stays on the dashboard, and a request answered with an
//! error has changed nothing.

use reqwest::StatusCode;
use sluice_store::JobState;

use super::{Browser, dead_job};
use crate::support::http::{Api, json};

/// `{"note": "\u0000"}`: JSON text holding an escaped NUL, which `jsonb` refuses.
const NUL_FILTER: &str = r#"{"note": "\u0000"}"#;

async fn state(api: &Api, id: i64) -> JobState {
    api.store.get(None, id).await.unwrap().unwrap().state
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_payload_filter_jsonb_cannot_hold_is_a_named_400_and_changes_nothing(pool: sqlx::PgPool) {
    let api = Api::start(&pool).await;
    let token = api.tenant("acme").await;
    api.job_type("acme", "echo", "echo").await;
    let id = dead_job(&api, "acme", r#"{"note": "x"}"#).await;
    let mut browser = Browser::new(&api);
    browser.sign_in(&token).await;

    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair("payload", NUL_FILTER)
        .finish();
    let (status, body) = browser.get(&format!("/ui/jobs?{query}")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body.contains("payload: holds a NUL character (\\u0000) at $.note"),
        "{body}"
    );
    assert!(
        body.contains("id=\"filter\""),
        "the form comes back to fix: {body}"
    );

    // "Every job matching": the confirmation page and the confirmed action alike.
    for confirmed in ["0", "1"] {
        let (status, body) = browser
            .post(
                "/ui/jobs/bulk",
                &[
                    ("scope", "matching"),
                    ("action", "retry"),
                    ("confirmed", confirmed),
                    ("payload", NUL_FILTER),
                ],
                true,
            )
            .await;
        assert_eq!(
            status,
            StatusCode::BAD_REQUEST,
            "confirmed={confirmed}: {body}"
        );
        assert!(body.contains("NUL character"), "{body}");
    }
    assert_eq!(state(&api, id).await, JobState::Dead);

    // The HTTP API's event payload is refused by the same rule, naming where.
    let body = serde_json::json!({"type": "a.b", "payload": {"note": "\u{0}"}});
    let (status, body) = json(api.post("/v1/events", &token, body).await).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("at $.note"), "{body}");
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_bulk_action_checks_every_field_before_it_changes_anything(pool: sqlx::PgPool) {
    let api = Api::start(&pool).await;
    let token = api.tenant("acme").await;
    api.job_type("acme", "echo", "echo").await;
    let id = dead_job(&api, "acme", "{}").await;
    let ids = id.to_string();
    let mut browser = Browser::new(&api);
    browser.sign_in(&token).await;
    browser.get("/ui/jobs").await;

    // A `return` with CR/LF (a header injection, and a 500 after the retry before).
    let (status, body) = browser
        .post(
            "/ui/jobs/bulk",
            &[
                ("action", "retry"),
                ("ids", &ids),
                ("return", "state=dead\r\nLocation: https://evil.example/"),
            ],
            true,
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body.contains("return: holds the control character"),
        "{body}"
    );
    assert_eq!(state(&api, id).await, JobState::Dead, "nothing applied");

    // One id that is not an id refuses the whole action.
    let (status, body) = browser
        .post(
            "/ui/jobs/bulk",
            &[("action", "retry"), ("ids", &ids), ("ids", "12abc")],
            true,
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body.contains("ids: &quot;12abc&quot; is not a job id"),
        "{body}"
    );
    assert_eq!(state(&api, id).await, JobState::Dead, "nothing applied");

    // Whatever `return` holds, the redirect stays on the list, with the filter's fields.
    let response = browser
        .post_raw(
            "/ui/jobs/bulk",
            &[
                ("action", "retry"),
                ("ids", &ids),
                (
                    "return",
                    "https://evil.example/x&state=dead&type=echo&next=//evil",
                ),
            ],
        )
        .await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        location.starts_with("/ui/jobs?state=dead&type=echo&done="),
        "{location}"
    );
    assert!(!location.contains("evil"), "{location}");
    assert_eq!(state(&api, id).await, JobState::Pending);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn ui_with_a_trailing_slash_redirects_to_the_dashboard(pool: sqlx::PgPool) {
    let api = Api::start(&pool).await;
    let mut browser = Browser::new(&api);
    let response = browser.get_raw("/ui/").await;
    assert_eq!(response.status(), StatusCode::PERMANENT_REDIRECT);
    assert_eq!(response.headers()["location"], "/ui");
    assert_eq!(browser.get("/ui").await.0, StatusCode::SEE_OTHER);
}
