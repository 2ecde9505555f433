//! What is read when a webhook is sent rather than when its event was: an endpoint
//! edited, deleted, disabled or narrowed after `sluice.send_event` gets the new URL or
//! nothing; and a `send_event` rolled back with the application's transaction leaves no
//! event and no job, while an idempotency key makes one event of two sends.

use super::*;

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn the_endpoint_is_read_at_send_time(pool: PgPool) {
    let ctx = setup(&pool);
    let (old, new) = (
        TestServer::start(status(200, "old")).await,
        TestServer::start(status(200, "new")).await,
    );
    let (moved, secret) = ctx.endpoint(&url(&old), &["*"], &[]).await;
    let (deleted, _) = ctx.endpoint(&url(&old), &["*"], &[]).await;
    let (disabled, _) = ctx.endpoint(&url(&old), &["*"], &[]).await;
    let (narrowed, _) = ctx.endpoint(&url(&old), &["invoice.*"], &[]).await;
    send(&pool, TENANT, "invoice.paid", json!({"v": 1})).await;

    // Between the enqueue and the send: edit, delete, disable, narrow.
    let to_new = EndpointUpdate {
        url: Some(url(&new)),
        ..EndpointUpdate::default()
    };
    ctx.store
        .update_webhook_endpoint(TENANT, moved, &to_new)
        .await
        .unwrap();
    ctx.store
        .delete_webhook_endpoint(TENANT, deleted)
        .await
        .unwrap();
    let off = EndpointUpdate {
        enabled: Some(false),
        ..EndpointUpdate::default()
    };
    ctx.store
        .update_webhook_endpoint(TENANT, disabled, &off)
        .await
        .unwrap();
    let narrow = EndpointUpdate {
        events: Some(vec!["user.*".into()]),
        ..EndpointUpdate::default()
    };
    ctx.store
        .update_webhook_endpoint(TENANT, narrowed, &narrow)
        .await
        .unwrap();
    ctx.drain().await;

    assert_eq!(old.accepts(), 0, "nothing goes to the old URL");
    let requests = new.requests();
    assert_eq!(requests.len(), 1);
    verify(&requests[0], &secret).unwrap();
    let jobs: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT state::text, last_error FROM sluice.jobs WHERE job_type = 'sluice.webhook' ORDER BY id",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(jobs[0].0, "completed");
    assert_eq!(jobs[1].0, "cancelled");
    assert!(
        jobs[1].1.as_deref().unwrap().contains("was deleted"),
        "{jobs:?}"
    );
    assert_eq!(jobs[2].0, "cancelled");
    assert!(
        jobs[2].1.as_deref().unwrap().contains("disabled"),
        "{jobs:?}"
    );
    assert_eq!(jobs[3].0, "cancelled");
    assert!(
        jobs[3]
            .1
            .as_deref()
            .unwrap()
            .contains("no longer subscribes"),
        "{jobs:?}"
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_rolled_back_send_delivers_nothing(pool: PgPool) {
    let ctx = setup(&pool);
    let receiver = TestServer::start(status(200, "ok")).await;
    let (ep, _) = ctx.endpoint(&url(&receiver), &["*"], &[]).await;
    let mut tx = pool.begin().await.unwrap();
    sqlx::query("CREATE TABLE IF NOT EXISTS invoices (id int)")
        .execute(&mut *tx)
        .await
        .unwrap();
    let _: i64 =
        sqlx::query_scalar("SELECT sluice.send_event('acme', 'invoice.paid', '{\"id\": 1}')")
            .fetch_one(&mut *tx)
            .await
            .unwrap();
    tx.rollback().await.unwrap();
    let counts: (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM sluice.jobs), (SELECT count(*) FROM sluice.webhook_events)",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(counts, (0, 0));
    // The same call committed: one delivery, sent.
    let key: Option<&str> = Some("invoice-1-paid");
    let first: i64 =
        sqlx::query_scalar("SELECT sluice.send_event('acme', 'invoice.paid', '{\"id\": 1}', $1)")
            .bind(key)
            .fetch_one(&pool)
            .await
            .unwrap();
    let again = ctx
        .store
        .send_event(TENANT, "invoice.paid", &json!({"id": 1}), key, None)
        .await
        .unwrap();
    assert_eq!(first, again, "one idempotency key, one event");
    ctx.drain().await;
    assert_eq!(receiver.requests().len(), 1);
    assert_eq!(ctx.deliveries(ep).await.len(), 1);
}
