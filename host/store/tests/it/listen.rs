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

    // A future job tells listeners when it falls due (database time); a due one wakes them.
    store
        .enqueue(&job("later").with_run_at(RunAt::Delay(Duration::from_secs(600))))
        .await
        .unwrap();
    let n = tokio::time::timeout(WITHIN, listener.recv())
        .await
        .unwrap()
        .unwrap();
    let Notice::JobsDueIn(due_in) = n else {
        panic!("expected JobsDueIn, got {n:?}")
    };
    assert!(
        due_in > Duration::from_secs(590) && due_in <= Duration::from_secs(600),
        "{due_in:?}"
    );
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

/// A failed attempt going back to pending tells listeners when its retry falls due, and a
/// listener opened on its own connection (`Store::listen_at`, for deployments behind
/// a transaction pooler) hears it like a pooled one.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_retry_announces_its_due_time_to_a_direct_listener(pool: PgPool) {
    let store = setup(&pool).await;
    let base = std::env::var("DATABASE_URL").expect("DATABASE_URL");
    let db = pool.connect_options().get_database().unwrap().to_owned();
    let (prefix, _) = base.rsplit_once('/').unwrap();
    let mut listener = store.listen_at(&format!("{prefix}/{db}")).await.unwrap();
    store
        .enqueue(&job("x").with_run_at(RunAt::Delay(Duration::from_secs(60))))
        .await
        .unwrap();
    let n = tokio::time::timeout(WITHIN, listener.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(n, Notice::JobsDueIn(_)), "{n:?}");
    sqlx::query("UPDATE sluice.jobs SET run_at = now()")
        .execute(&pool)
        .await
        .unwrap();
    let claimed = claim_one(&store, "w").await;
    let failure = sluice_store::Failure {
        backoff: sluice_store::Backoff {
            base: Duration::from_secs(30),
            cap: Duration::from_secs(30),
            jitter: 0.0,
        },
        ..sluice_store::Failure::retry("try later")
    };
    store.fail(&claimed.lease, &failure).await.unwrap();
    let n = tokio::time::timeout(WITHIN, listener.recv())
        .await
        .unwrap()
        .unwrap();
    let Notice::JobsDueIn(due_in) = n else {
        panic!("expected JobsDueIn, got {n:?}")
    };
    assert!(
        due_in > Duration::from_secs(29) && due_in <= Duration::from_secs(30),
        "{due_in:?}"
    );
}
