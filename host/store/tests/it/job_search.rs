//! The dashboard's job search: every filter alone and combined, keyset pages, payload
//! containment (non-JSON payloads never match and never fail), and counts.

use sluice_store::{
    BulkAction, Completion, JobSearch, JobState, KeyScope, NewJob, Store, StoreError,
};
use sqlx::PgPool;

use crate::common::*;

fn search() -> JobSearch {
    JobSearch {
        tenant: TENANT.into(),
        ..JobSearch::default()
    }
}

/// Ids found by `s` (all pages of 500), newest first; checks count_jobs agrees.
async fn ids(store: &Store, s: &JobSearch) -> Vec<i64> {
    let found: Vec<i64> = store
        .search_jobs(s, None, 500)
        .await
        .unwrap()
        .into_iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(
        store.count_jobs(s).await.unwrap(),
        found.len() as i64,
        "{s:?}"
    );
    found
}

struct Fixture {
    store: Store,
    /// acme send-email {"user":1,"kind":"welcome"}, completed, with two follow-ups.
    parent: i64,
    children: Vec<i64>,
    /// acme charge-card {"user":2}, dead.
    dead: i64,
    /// acme send-email, not UTF-8, cancelled.
    binary: i64,
    /// acme send-email "[1,2]" priority 20, key "k-1", pending.
    keyed: i64,
    /// acme send-email {"user":1,"tags":["a","b"]}, pending.
    tagged: i64,
    /// globex send-email {"user":1}, pending.
    other: i64,
}

async fn fixture(pool: &PgPool) -> Fixture {
    let store = setup(pool).await;
    let f = jobs(&store);
    let done = Completion {
        follow_ups: vec![
            NewJob::new(TENANT, ONCE, r#"{"child":0}"#),
            NewJob::new(TENANT, ONCE, r#"{"child":1}"#),
        ],
        ..Completion::default()
    };
    let parent = f
        .completed_with(job(r#"{"user":1,"kind":"welcome"}"#), done)
        .await;
    let record = store.get(None, parent).await.unwrap().unwrap();
    let children = record.children.clone();
    assert_eq!(children.len(), 2);
    // The children are pending charge-card jobs; make the dead one of another type run
    // first by giving it a higher priority.
    let dead = f
        .dead(
            NewJob::new(TENANT, ONCE, r#"{"user":2}"#).with_priority(30),
            "boom",
        )
        .await;
    let binary = f
        .cancelled(NewJob::new(TENANT, JOB, vec![0xff, 0xfe, b'{']))
        .await;
    let keyed = f
        .pending(
            job("[1,2]")
                .with_priority(20)
                .with_idempotency_key("k-1", KeyScope::Retained),
        )
        .await;
    let tagged = f.pending(job(r#"{"user":1,"tags":["a","b"]}"#)).await;
    let other = f
        .pending(NewJob::new(OTHER_TENANT, JOB, r#"{"user":1}"#))
        .await;
    Fixture {
        store,
        parent,
        children,
        dead,
        binary,
        keyed,
        tagged,
        other,
    }
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn each_filter_alone_and_combined(pool: PgPool) {
    let x = fixture(&pool).await;
    let s = &x.store;
    let (c0, c1) = (x.children[0], x.children[1]);
    let mut all = vec![x.parent, c0, c1, x.dead, x.binary, x.keyed, x.tagged];
    all.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(
        ids(s, &search()).await,
        all,
        "newest first, one tenant only"
    );
    assert!(!all.contains(&x.other));

    let states = |states: Vec<JobState>| JobSearch { states, ..search() };
    assert_eq!(
        ids(s, &states(vec![JobState::Dead, JobState::Cancelled])).await,
        [x.binary, x.dead]
    );
    assert_eq!(ids(s, &states(vec![JobState::Completed])).await, [x.parent]);

    let of_type = JobSearch {
        job_type: Some(ONCE.into()),
        ..search()
    };
    assert_eq!(ids(s, &of_type).await, [x.dead, c1, c0]);
    let priority = JobSearch {
        priority: Some(20),
        ..search()
    };
    assert_eq!(ids(s, &priority).await, [x.keyed]);
    let by_id = JobSearch {
        id: Some(x.dead),
        ..search()
    };
    assert_eq!(ids(s, &by_id).await, [x.dead]);
    let other_tenants_id = JobSearch {
        id: Some(x.other),
        ..search()
    };
    assert!(ids(s, &other_tenants_id).await.is_empty());
    let key = JobSearch {
        idempotency_key: Some("k-1".into()),
        ..search()
    };
    assert_eq!(ids(s, &key).await, [x.keyed]);
    let children = JobSearch {
        parent: Some(x.parent),
        ..search()
    };
    assert_eq!(ids(s, &children).await, [c1, c0]);

    // Created times: move two jobs into the past, then take half-open windows.
    sqlx::query("UPDATE sluice.jobs SET created_at = now() - interval '2 days' WHERE id = $1")
        .bind(x.dead)
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("UPDATE sluice.jobs SET created_at = now() - interval '1 day' WHERE id = $1")
        .bind(x.keyed)
        .execute(&pool)
        .await
        .unwrap();
    let now = db_now(&pool).await;
    let window = |from: Option<i64>, to: Option<i64>| JobSearch {
        created_from: from.map(|h| now - chrono::Duration::hours(h)),
        created_to: to.map(|h| now - chrono::Duration::hours(h)),
        ..search()
    };
    assert_eq!(ids(s, &window(None, Some(36))).await, [x.dead]);
    assert_eq!(ids(s, &window(Some(36), Some(12))).await, [x.keyed]);
    let recent = ids(s, &window(Some(12), None)).await;
    assert_eq!(recent.len(), all.len() - 2);
    assert!(!recent.contains(&x.dead) && !recent.contains(&x.keyed));

    // Combinations: every filter must hold.
    let combined = JobSearch {
        job_type: Some(ONCE.into()),
        states: vec![JobState::Pending],
        parent: Some(x.parent),
        ..search()
    };
    assert_eq!(ids(s, &combined).await, [c1, c0]);
    let none = JobSearch {
        job_type: Some(JOB.into()),
        priority: Some(30),
        ..search()
    };
    assert!(ids(s, &none).await.is_empty());
    let nul = JobSearch {
        job_type: Some("a\0b".into()),
        ..search()
    };
    assert!(ids(s, &nul).await.is_empty());
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn payload_containment_skips_payloads_that_are_not_json(pool: PgPool) {
    let x = fixture(&pool).await;
    let s = &x.store;
    let contains = |v: serde_json::Value| JobSearch {
        payload_contains: Some(v),
        ..search()
    };
    assert_eq!(
        ids(s, &contains(serde_json::json!({"user": 1}))).await,
        [x.tagged, x.parent],
        "globex's {{\"user\":1}} is not acme's"
    );
    assert_eq!(
        ids(s, &contains(serde_json::json!({"tags": ["b"]}))).await,
        [x.tagged]
    );
    assert_eq!(ids(s, &contains(serde_json::json!([2]))).await, [x.keyed]);
    assert!(
        ids(s, &contains(serde_json::json!({"user": 3})))
            .await
            .is_empty()
    );
    // Every JSON object contains {}: all but the binary payload and the array.
    let objects = ids(s, &contains(serde_json::json!({}))).await;
    assert!(!objects.contains(&x.binary) && !objects.contains(&x.keyed));
    assert_eq!(objects.len(), 5);
    let combined = JobSearch {
        states: vec![JobState::Pending],
        ..contains(serde_json::json!({"user": 1}))
    };
    assert_eq!(ids(s, &combined).await, [x.tagged]);
}

/// `jsonb` cannot hold `\u0000`: a payload filter holding it is refused by every call
/// that takes a search, naming the filter and where (not a database error, a 500 to the
/// dashboard), and the bulk action changes nothing. `send_event` applies the same rule.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn json_holding_nul_is_refused_naming_where_by_every_call(pool: PgPool) {
    let x = fixture(&pool).await;
    let s = &x.store;
    let nul = JobSearch {
        payload_contains: Some(serde_json::json!({"user": 2, "note": ["a", "b\u{0}"]})),
        ..search()
    };
    let expected = "invalid payload filter: holds a NUL character (\\u0000) at $.note[1]; \
                    PostgreSQL's jsonb cannot hold it";
    let refused = |e: StoreError| {
        assert!(matches!(e, StoreError::InvalidInput { .. }), "{e:?}");
        assert_eq!(e.to_string(), expected);
    };
    refused(s.search_jobs(&nul, None, 10).await.unwrap_err());
    refused(s.count_jobs(&nul).await.unwrap_err());
    refused(s.bulk_matching(&nul, BulkAction::Retry).await.unwrap_err());
    assert_eq!(
        s.get(None, x.dead).await.unwrap().unwrap().state,
        JobState::Dead
    );

    let err = s
        .send_event(TENANT, "a.b", &serde_json::json!({"k\u{0}": 1}), None, None)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidInput { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("NUL character (\\u0000) at $ (a key)"),
        "{err}"
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn pages_follow_the_keyset_and_the_limit_is_clamped(pool: PgPool) {
    let store = setup(&pool).await;
    let made: Vec<i64> = store
        .enqueue_many(
            &(0..7)
                .map(|i| job(&format!("{{\"n\":{i}}}")))
                .collect::<Vec<_>>(),
        )
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = store.search_jobs(&search(), after, 3).await.unwrap();
        assert!(page.len() <= 3);
        if page.is_empty() {
            break;
        }
        after = Some(page.last().unwrap().id);
        seen.extend(page.iter().map(|j| j.id));
    }
    let mut newest_first = made.clone();
    newest_first.reverse();
    assert_eq!(seen, newest_first);
    // limit 0 → 1, huge → 500.
    assert_eq!(
        store.search_jobs(&search(), None, 0).await.unwrap().len(),
        1
    );
    assert_eq!(
        store
            .search_jobs(&search(), None, 100_000)
            .await
            .unwrap()
            .len(),
        7
    );
    let first = &store.search_jobs(&search(), None, 1).await.unwrap()[0];
    assert_eq!(
        (first.tenant.as_str(), first.payload_size, first.state),
        (TENANT, 7, JobState::Pending)
    );
}
