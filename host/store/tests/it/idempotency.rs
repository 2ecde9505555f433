//! Idempotency keys: the unique index decides, under concurrency too; scopes; tenants.

use std::sync::Arc;

use sluice_store::{Completion, KeyScope, NewJob, Store};
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::common::*;

/// 50 concurrent enqueues with one key: one row, one id for all, 49 told duplicate.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn concurrent_enqueues_with_one_key_make_one_job(_: PgPoolOptions, opts: PgConnectOptions) {
    let pool = PgPoolOptions::new()
        .max_connections(50)
        .connect_with(opts)
        .await
        .unwrap();
    let store = setup(&pool).await;
    for scope in [KeyScope::Retained, KeyScope::Unfinished] {
        let key = format!("order-42-{}", scope.as_str());
        let barrier = Arc::new(tokio::sync::Barrier::new(50));
        let mut tasks = Vec::new();
        for i in 0..50 {
            let store: Store = store.clone();
            let barrier = barrier.clone();
            let key = key.clone();
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                store
                    .enqueue(&job(&format!("attempt {i}")).with_idempotency_key(key, scope))
                    .await
                    .unwrap()
            }));
        }
        let mut results = Vec::new();
        for t in tasks {
            results.push(t.await.unwrap());
        }
        let id = results[0].id;
        assert!(results.iter().all(|e| e.id == id), "all 50 got the same id");
        assert_eq!(results.iter().filter(|e| e.created).count(), 1);
        assert_eq!(results.iter().filter(|e| !e.created).count(), 49);
        let rows: i64 =
            sqlx::query_scalar("SELECT count(*) FROM sluice.jobs WHERE idempotency_key = $1")
                .bind(&key)
                .fetch_one(&pool)
                .await
                .unwrap();
        assert_eq!(rows, 1);
    }
    pool.close().await;
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn unfinished_key_is_freed_when_the_job_finishes(pool: PgPool) {
    let store = setup(&pool).await;
    let new = || job("digest").with_idempotency_key("digest-user-7", KeyScope::Unfinished);
    let first = store.enqueue(&new()).await.unwrap();
    assert!(first.created);
    let again = store.enqueue(&new()).await.unwrap();
    assert_eq!((again.id, again.created), (first.id, false));

    // Still taken while running.
    let c = claim_one(&store, "w").await;
    let again = store.enqueue(&new()).await.unwrap();
    assert_eq!((again.id, again.created), (first.id, false));

    store
        .complete(&c.lease, &Completion::default())
        .await
        .unwrap();
    let second = store.enqueue(&new()).await.unwrap();
    assert!(second.created);
    assert_ne!(second.id, first.id);

    // Cancelled frees it too.
    store.cancel(None, second.id).await.unwrap();
    let third = store.enqueue(&new()).await.unwrap();
    assert!(third.created);
    // And now the cancelled one cannot be retried while the third holds the key.
    let err = store.retry(None, second.id).await.unwrap_err();
    assert!(
        matches!(err, sluice_store::StoreError::IllegalTransition { .. }),
        "{err}"
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn retained_key_stays_taken_after_completion(pool: PgPool) {
    let store = setup(&pool).await;
    let new = || job("charge").with_idempotency_key("charge-order-42", KeyScope::Retained);
    let first = jobs(&store).worker("w").completed(new()).await;
    let again = store.enqueue(&new()).await.unwrap();
    assert_eq!((again.id, again.created), (first, false));
    assert_eq!(count_jobs(&pool).await, 1);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn scopes_block_each_other(pool: PgPool) {
    let store = setup(&pool).await;
    // A retained holder blocks an unfinished request...
    let held = store
        .enqueue(&job("a").with_idempotency_key("k1", KeyScope::Retained))
        .await
        .unwrap();
    let e = store
        .enqueue(&job("b").with_idempotency_key("k1", KeyScope::Unfinished))
        .await
        .unwrap();
    assert_eq!((e.id, e.created), (held.id, false));
    // ...and a pending unfinished holder blocks a retained request.
    let held = store
        .enqueue(&job("c").with_idempotency_key("k2", KeyScope::Unfinished))
        .await
        .unwrap();
    let e = store
        .enqueue(&job("d").with_idempotency_key("k2", KeyScope::Retained))
        .await
        .unwrap();
    assert_eq!((e.id, e.created), (held.id, false));
    assert_eq!(count_jobs(&pool).await, 2);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn keys_are_per_tenant(pool: PgPool) {
    let store = setup(&pool).await;
    let a = store
        .enqueue(&job("a").with_idempotency_key("same", KeyScope::Retained))
        .await
        .unwrap();
    let b = store
        .enqueue(
            &NewJob::new(OTHER_TENANT, JOB, "b").with_idempotency_key("same", KeyScope::Retained),
        )
        .await
        .unwrap();
    assert!(a.created && b.created);
    assert_ne!(a.id, b.id);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn bulk_resolves_keys_within_and_across_batches(pool: PgPool) {
    let store = setup(&pool).await;
    let existing = store
        .enqueue(&job("old").with_idempotency_key("k-old", KeyScope::Retained))
        .await
        .unwrap();
    let batch = vec![
        job("1").with_idempotency_key("k-new", KeyScope::Retained),
        job("2"),
        job("3").with_idempotency_key("k-old", KeyScope::Retained),
        job("4").with_idempotency_key("k-new", KeyScope::Unfinished),
        NewJob::new(OTHER_TENANT, JOB, "5").with_idempotency_key("k-new", KeyScope::Retained),
    ];
    let out = store.enqueue_many(&batch).await.unwrap();
    assert!(out[0].created);
    assert!(out[1].created);
    assert_eq!((out[2].id, out[2].created), (existing.id, false));
    assert_eq!((out[3].id, out[3].created), (out[0].id, false));
    assert!(out[4].created);
    assert_ne!(out[4].id, out[0].id);
    assert_eq!(count_jobs(&pool).await, 4);
}
