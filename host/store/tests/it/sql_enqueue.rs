//! `sluice.enqueue(...)` (migration 0005): enqueue inside the caller's own transaction,
//! with the same rules and refusals as the Rust enqueue path.

use std::time::Duration;

use sluice_store::{JobState, KeyScope, NewJob, Notice, StoreError, TenantLimits};
use sqlx::PgPool;
use sqlx::postgres::PgDatabaseError;

use crate::common::*;

/// Enqueues through the SQL function on `conn` (a transaction or the pool).
async fn sql_enqueue<'c, E>(conn: E, tenant: &str, job_type: &str, payload: &str) -> i64
where
    E: sqlx::PgExecutor<'c>,
{
    sqlx::query_scalar("SELECT sluice.enqueue(tenant => $1, job_type => $2, payload => $3::jsonb)")
        .bind(tenant)
        .bind(job_type)
        .bind(payload)
        .fetch_one(conn)
        .await
        .unwrap()
}

/// The refusal of a call: (SQLSTATE, COLUMN, message).
async fn refusal(pool: &PgPool, call: &'static str) -> (String, String, String) {
    let err = sqlx::query(call).execute(pool).await.unwrap_err();
    let db = err
        .as_database_error()
        .unwrap_or_else(|| panic!("not a database error: {err}"));
    let pg = db.downcast_ref::<PgDatabaseError>();
    (
        pg.code().to_owned(),
        pg.column().unwrap_or_default().to_owned(),
        pg.message().to_owned(),
    )
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_committed_transaction_enqueues_and_a_rolled_back_one_leaves_nothing(pool: PgPool) {
    let store = setup(&pool).await;
    let mut listener = store.listen().await.unwrap();

    let mut tx = pool.begin().await.unwrap();
    let id = sql_enqueue(&mut *tx, TENANT, JOB, r#"{"to":"a@example.com"}"#).await;
    assert!(
        store.get(None, id).await.unwrap().is_none(),
        "invisible to others before commit"
    );
    tx.commit().await.unwrap();
    let notice = tokio::time::timeout(Duration::from_secs(10), listener.recv())
        .await
        .expect("a notification after commit")
        .unwrap();
    assert_eq!(notice, Notice::JobsAvailable);

    let job = store
        .get(Some(TENANT), id)
        .await
        .unwrap()
        .expect("committed job");
    assert_eq!(job.state, JobState::Pending);
    assert_eq!(job.job_type, JOB);
    let payload: serde_json::Value = serde_json::from_slice(&job.payload).unwrap();
    assert_eq!(payload, serde_json::json!({"to": "a@example.com"}));
    assert_eq!(job.priority, 10, "medium, like the Rust path");
    assert_eq!(job.max_attempts, 3, "the job type's attempts");
    assert_eq!(job.key_scope, KeyScope::Retained);

    let before = count_jobs(&pool).await;
    let mut tx = pool.begin().await.unwrap();
    let gone = sql_enqueue(&mut *tx, TENANT, JOB, "{}").await;
    tx.rollback().await.unwrap();
    assert_eq!(count_jobs(&pool).await, before, "a rollback leaves no job");
    assert!(store.get(None, gone).await.unwrap().is_none());

    // Every argument, by name, lands in its column; a one-attempt type's default holds.
    let id: i64 = sqlx::query_scalar(
        "SELECT sluice.enqueue(tenant => 'acme', job_type => 'charge-card', payload => '[1]', \
         priority => 30, run_at => now() + interval '1 hour', max_attempts => 2, \
         idempotency_key => 'order-42', key_scope => 'unfinished')",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    let job = store.get(None, id).await.unwrap().unwrap();
    assert_eq!(
        (job.priority, job.max_attempts, job.key_scope),
        (30, 2, KeyScope::Unfinished)
    );
    assert_eq!(job.idempotency_key.as_deref(), Some("order-42"));
    assert!(job.run_at > db_now(&pool).await + chrono::Duration::minutes(59));
    let once = sql_enqueue(&pool, TENANT, ONCE, "{}").await;
    assert_eq!(
        store.get(None, once).await.unwrap().unwrap().max_attempts,
        1
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_duplicate_key_returns_the_same_id_from_sql_and_from_rust(pool: PgPool) {
    let store = setup(&pool).await;
    let call = "SELECT sluice.enqueue(tenant => 'acme', job_type => 'send-email', \
                payload => $1::jsonb, idempotency_key => 'welcome-7')";
    let first: i64 = sqlx::query_scalar(call)
        .bind(r#"{"n":1}"#)
        .fetch_one(&pool)
        .await
        .unwrap();
    let again: i64 = sqlx::query_scalar(call)
        .bind(r#"{"n":2}"#)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(first, again);
    let from_rust = store
        .enqueue(&job("{}").with_idempotency_key("welcome-7", KeyScope::Retained))
        .await
        .unwrap();
    assert_eq!((from_rust.id, from_rust.created), (first, false));
    assert_eq!(count_jobs(&pool).await, 1);
    let kept = store.get(None, first).await.unwrap().unwrap();
    assert_eq!(kept.payload, br#"{"n": 1}"#, "the first payload is kept");

    // The same key in another tenant is another job.
    let other: i64 = sqlx::query_scalar(
        "SELECT sluice.enqueue(tenant => 'globex', job_type => 'send-email', \
         payload => '{}', idempotency_key => 'welcome-7')",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_ne!(other, first);

    // An unfinished-scoped key frees when its job finishes.
    let call = "SELECT sluice.enqueue(tenant => 'acme', job_type => 'charge-card', \
                payload => '{}', idempotency_key => 'digest', key_scope => 'unfinished')";
    let digest: i64 = sqlx::query_scalar(call).fetch_one(&pool).await.unwrap();
    let mut only_digests = claim_req("w", 1);
    only_digests.job_types = Some(vec![ONCE.into()]);
    let claimed = store.claim(&only_digests).await.unwrap().pop().unwrap();
    assert_eq!(claimed.id, digest);
    store
        .fail(&claimed.lease, &sluice_store::Failure::fatal("no"))
        .await
        .unwrap();
    let next: i64 = sqlx::query_scalar(call).fetch_one(&pool).await.unwrap();
    assert_ne!(next, digest, "the key was freed when the job died");
}

/// Test 10's refusals, through SQL: each names the problem, and nothing is written.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn bad_calls_are_refused_with_a_code_and_the_argument_named(pool: PgPool) {
    let store = setup(&pool).await;
    store
        .set_tenant_limits(
            OTHER_TENANT,
            &TenantLimits {
                max_payload_bytes: Some(16),
                ..TenantLimits::default()
            },
        )
        .await
        .unwrap();
    let cases = [
        (
            "SELECT sluice.enqueue(tenant => 'nobody', job_type => 'send-email', payload => '{}')",
            "23503",
            "tenant",
            "unknown tenant \"nobody\"",
        ),
        (
            "SELECT sluice.enqueue(tenant => 'acme', job_type => 'no-such-type', payload => '{}')",
            "23503",
            "job_type",
            "unknown job type \"no-such-type\" for tenant \"acme\"",
        ),
        (
            "SELECT sluice.enqueue(tenant => 'globex', job_type => 'send-email', \
             payload => '{\"to\":\"someone@example.com\"}')",
            "54000",
            "payload",
            "payload is 29 bytes, over the limit of 16 bytes",
        ),
        (
            "SELECT sluice.enqueue(tenant => 'acme', job_type => 'send-email', \
             payload => to_jsonb(repeat('x', 1048576)))",
            "54000",
            "payload",
            "over the limit of 1048576 bytes",
        ),
        (
            "SELECT sluice.enqueue(tenant => 'acme', job_type => 'send-email', payload => '{}', \
             priority => 40000)",
            "22023",
            "priority",
            "invalid priority: 40000 is outside -32768..=32767",
        ),
        (
            "SELECT sluice.enqueue(tenant => 'acme', job_type => 'send-email', payload => '{}', \
             max_attempts => 0)",
            "22023",
            "max_attempts",
            "invalid max_attempts: must be at least 1",
        ),
        (
            "SELECT sluice.enqueue(tenant => 'acme', job_type => 'send-email', payload => '{}', \
             idempotency_key => '')",
            "22023",
            "idempotency_key",
            "invalid idempotency_key: must be 1 to 255 characters, got 0",
        ),
        (
            "SELECT sluice.enqueue(tenant => 'acme', job_type => 'send-email', payload => '{}', \
             key_scope => 'forever')",
            "22023",
            "key_scope",
            "'forever' is not a key scope",
        ),
        (
            "SELECT sluice.enqueue(tenant => 'acme', job_type => 'send-email', payload => NULL)",
            "22023",
            "payload",
            "invalid payload: must not be NULL",
        ),
    ];
    for (call, code, column, message) in cases {
        let (got_code, got_column, got_message) = refusal(&pool, call).await;
        assert_eq!(
            (got_code.as_str(), got_column.as_str()),
            (code, column),
            "{call}: {got_message}"
        );
        assert!(
            got_message.contains(message),
            "{call}: expected {message:?} in {got_message:?}"
        );
    }
    assert_eq!(count_jobs(&pool).await, 0, "nothing written");

    // The Rust path refuses the same inputs for the same reasons.
    let rust = [
        (NewJob::new("nobody", JOB, "{}"), "tenant"),
        (NewJob::new(TENANT, "no-such-type", "{}"), "job_type"),
        (
            NewJob::new(OTHER_TENANT, JOB, r#"{"to": "someone@example.com"}"#),
            "payload",
        ),
        (job("{}").with_priority(40_000), "priority"),
        (job("{}").with_max_attempts(0), "max_attempts"),
        (
            job("{}").with_idempotency_key("", KeyScope::Retained),
            "idempotency_key",
        ),
    ];
    for (new_job, column) in rust {
        let err = store.enqueue(&new_job).await.unwrap_err();
        let same = match (&err, column) {
            (StoreError::UnknownTenant(_), "tenant") => true,
            (StoreError::UnknownJobType { .. }, "job_type") => true,
            (
                StoreError::PayloadTooLarge {
                    size: 29,
                    limit: 16,
                },
                "payload",
            ) => true,
            (StoreError::InvalidInput { field, .. }, _) => *field == column,
            _ => false,
        };
        assert!(same, "Rust path refused {column} differently: {err}");
    }
    assert_eq!(count_jobs(&pool).await, 0, "nothing written");
}
