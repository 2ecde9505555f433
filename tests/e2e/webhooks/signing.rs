//! Rotating an endpoint's signing secret: with a grace period both the old and the new
//! secret sign each request (two signatures, each accepted by the reference verifier);
//! rotated without grace, only the newest signs.

use super::*;

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn after_rotation_both_secrets_sign_each_request(pool: PgPool) {
    let ctx = setup(&pool);
    let receiver = TestServer::start(status(200, "ok")).await;
    let (ep, old_secret) = ctx.endpoint(&url(&receiver), &["*"], &[]).await;
    let (info, new_secret) = rotate_secret(
        &ctx.store,
        Some(&ctx.keyring),
        TENANT,
        ep,
        Duration::from_secs(3600),
    )
    .await
    .unwrap();
    assert_ne!(old_secret, new_secret);
    assert!(info.previous_until.is_some());
    send(&pool, TENANT, "invoice.paid", json!({})).await;
    ctx.drain().await;
    let requests = receiver.requests();
    assert_eq!(requests.len(), 1);
    let signatures = requests[0].header("webhook-signature").unwrap();
    assert_eq!(signatures.split(' ').count(), 2, "{signatures}");
    verify(&requests[0], &old_secret).expect("the old secret still verifies");
    verify(&requests[0], &new_secret).expect("the new secret verifies");
    assert!(verify(&requests[0], "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_err());
    // No grace: only the newest secret signs from now on.
    let (_, newest) = rotate_secret(&ctx.store, Some(&ctx.keyring), TENANT, ep, Duration::ZERO)
        .await
        .unwrap();
    send(&pool, TENANT, "invoice.paid", json!({})).await;
    ctx.drain().await;
    let requests = receiver.requests();
    assert_eq!(requests.len(), 2);
    let last = &requests[1];
    assert_eq!(
        last.header("webhook-signature").unwrap().split(' ').count(),
        1
    );
    verify(last, &newest).expect("the newest secret verifies");
    assert!(
        verify(last, &new_secret).is_err(),
        "a secret rotated out without grace no longer signs"
    );
}
