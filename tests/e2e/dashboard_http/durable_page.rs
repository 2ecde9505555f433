//! A durable job's page (issue #43): its type marked durable, what a waiting job waits
//! for, and its journal as a timeline (each call with its sequence number, live or replayed). The job is brought to
//! `waiting` through the store's own transitions (journal appends under the lease, then a
//! suspension), as the worker does; the sandbox's part is covered by `durable::`.

use reqwest::StatusCode;
use sluice_store::{JobTypeSpec, JournalEntry, NewJob, Suspension, Wake};

use super::Browser;
use crate::support::http::Api;

fn entry(seq: i32, kind: &str, request: &str, summary: &str) -> JournalEntry {
    JournalEntry {
        seq,
        kind: kind.into(),
        request: request.into(),
        summary: summary.into(),
        result: vec![0; 8],
    }
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_waiting_jobs_page_says_what_it_waits_for_and_shows_its_journal(pool: sqlx::PgPool) {
    let api = Api::start(&pool).await;
    let token = api.tenant("acme").await;
    api.job_type("acme", "echo", "echo").await;
    let record = api
        .store
        .get_job_type("acme", "echo")
        .await
        .unwrap()
        .unwrap();
    let durable = JobTypeSpec {
        durable: true,
        ..JobTypeSpec::new("acme", "echo", record.component_id)
    };
    api.store.set_job_type(&durable).await.unwrap();
    let job = NewJob::new("acme", "echo", b"{}".to_vec());
    let claimed = crate::support::jobs::Jobs::new(&api.store)
        .running(job)
        .await;
    let component: i64 = sqlx::query_scalar(
        "SELECT component_id FROM sluice.job_types WHERE tenant = 'acme' AND name = 'echo'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    let entries = [
        entry(0, "http", "POST http://127.0.0.1:9/step", "200, 2 bytes"),
        entry(1, "wall-clock", "now", "2026-12-06T12:00:00Z"),
    ];
    api.store
        .append_journal(
            claimed.id,
            claimed.lease.token,
            component,
            1 << 20,
            &entries,
        )
        .await
        .unwrap();
    let wait = Suspension {
        wake: Wake::Signal {
            name: "approve".into(),
            deadline: None,
        },
        follow_ups: Vec::new(),
        log: None,
        fuel_used: None,
        reason: "await signal `approve`".into(),
    };
    api.store.suspend(&claimed.lease, &wait).await.unwrap();

    let mut browser = Browser::new(&api);
    browser.sign_in(&token).await;
    let (status, types) = browser.get("/ui/types").await;
    assert_eq!(status, StatusCode::OK, "{types}");
    assert!(
        types.contains("<strong>durable</strong>"),
        "the type says it is durable: {types}"
    );
    let (status, body) = browser.get(&format!("/ui/jobs/{}", claimed.id)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("state-waiting"), "{body}");
    assert!(
        body.contains(r#"<span id="waiting-for">signal `approve`</span>"#),
        "{body}"
    );
    let journal = &body[body.find(r#"id="journal""#).expect("a journal table")..];
    for (seq, call) in [(0, "POST http://127.0.0.1:9/step"), (1, "now")] {
        let row = &journal[journal
            .find(&format!(r#"data-seq="{seq}""#))
            .unwrap_or_else(|| panic!("row {seq}: {journal}"))..];
        let row = &row[..row.find("</tr>").unwrap()];
        assert!(row.contains(call), "{row}");
        assert!(
            row.contains("live"),
            "recorded by the attempt that ran it: {row}"
        );
    }
}
