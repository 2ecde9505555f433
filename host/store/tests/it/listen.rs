//! LISTEN/NOTIFY: enqueue wakes listeners; cancelling a running job tells its worker.

use std::time::Duration;

use sluice_store::{Notice, RunAt};
use sqlx::PgPool;

use crate::common::*;

/// Upper bound for a notification to arrive (it normally takes milliseconds).
const WITHIN: Duration = Duration::from_secs(10);

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn enqueue_and_cancel_notify_listeners(pool: PgPool) {
    let store = setup(&pool).await;
    let mut listener = store.listen().await.unwrap();

    // A future job wakes nobody; a due one does.
    store
        .enqueue(&job("later").with_run_at(RunAt::Delay(Duration::from_secs(600))))
        .await
        .unwrap();
    let id = store.enqueue(&job("now")).await.unwrap().id;
    let n = tokio::time::timeout(WITHIN, listener.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n, Notice::JobsAvailable);

    claim_one(&store, "w").await;
    store.cancel(None, id).await.unwrap();
    let n = tokio::time::timeout(WITHIN, listener.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n, Notice::CancelRequested(id));

    // A bulk enqueue sends one notification (Postgres folds duplicates).
    store
        .enqueue_many(&[job("a"), job("b"), job("c")])
        .await
        .unwrap();
    let n = tokio::time::timeout(WITHIN, listener.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n, Notice::JobsAvailable);
    sqlx::query("SELECT pg_notify('sluice_cancel', '-1')")
        .execute(&pool)
        .await
        .unwrap();
    let n = tokio::time::timeout(WITHIN, listener.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        n,
        Notice::CancelRequested(-1),
        "no second JobsAvailable was queued"
    );
}

/// A dropped listening connection is reported (notices may have been missed) and the
/// listener carries on with a new connection.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn listener_reconnects_after_its_connection_drops(pool: PgPool) {
    let store = setup(&pool).await;
    let mut listener = store.listen().await.unwrap();
    let killed: i64 = sqlx::query_scalar(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
         WHERE datname = current_database() AND query LIKE 'LISTEN%'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(killed, 1);
    let n = tokio::time::timeout(WITHIN, listener.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n, Notice::Reconnected);
    store.enqueue(&job("after")).await.unwrap();
    let n = tokio::time::timeout(WITHIN, listener.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n, Notice::JobsAvailable);
}
