//! Webhook delivery itself: one request per matching, enabled endpoint, signed and
//! checked with the reference verifier (headers, body, the stored delivery); a 500 then a
//! 200 (two attempts, one `webhook-id`, two valid signatures); a 302, forbidden addresses
//! and a 410 (dead after one attempt, the 410 disabling the endpoint); and a receiver
//! slower than the endpoint's timeout (retried).

use super::*;

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn one_signed_delivery_per_matching_enabled_endpoint(pool: PgPool) {
    let ctx = setup(&pool);
    let (receiver, other, off) = (
        // A NUL in the answer: kept as U+FFFD, and the history still reads.
        TestServer::start(status(200, "thanks\0!")).await,
        TestServer::start(status(200, "no")).await,
        TestServer::start(status(200, "no")).await,
    );
    let (ep, secret) = ctx.endpoint(&url(&receiver), &["invoice.*"], &[]).await;
    let (ep_other, _) = ctx.endpoint(&url(&other), &["user.*"], &[]).await;
    let (ep_off, _) = ctx.endpoint(&url(&off), &["*"], &[]).await;
    let disable = EndpointUpdate {
        enabled: Some(false),
        ..EndpointUpdate::default()
    };
    ctx.store
        .update_webhook_endpoint(TENANT, ep_off, &disable)
        .await
        .unwrap();

    let event = send(
        &pool,
        TENANT,
        "invoice.paid",
        json!({"invoice": 42, "note": "é"}),
    )
    .await;
    ctx.drain().await;

    let requests = receiver.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    verify(request, &secret).expect("the reference verifier accepts the request");
    assert_eq!(request.method, "POST");
    assert_eq!(request.target, "/hook");
    assert_eq!(
        request.header("webhook-id"),
        Some(format!("msg_{event}_{ep}").as_str())
    );
    assert_eq!(request.header("sluice-webhook-attempt"), Some("1"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert!(
        request
            .header("user-agent")
            .unwrap()
            .starts_with("Sluice-Webhooks/")
    );
    let body: Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(body["type"], "invoice.paid");
    assert_eq!(body["id"], format!("evt_{event}"));
    assert_eq!(body["data"], json!({"invoice": 42, "note": "é"}));
    assert!(body["timestamp"].as_str().unwrap().ends_with('Z'));
    assert_eq!((other.accepts(), off.accepts()), (0, 0));

    let delivered = ctx.deliveries(ep).await;
    let delivery = one(&delivered);
    assert_eq!(
        (
            delivery.state.as_str(),
            delivery.attempt,
            delivery.last_status
        ),
        ("completed", 1, Some(200))
    );
    assert_eq!(delivery.response.as_deref(), Some("thanks\u{FFFD}!"));
    assert_eq!(delivery.event_type.as_deref(), Some("invoice.paid"));
    assert!(ctx.deliveries(ep_other).await.is_empty());
    assert!(ctx.deliveries(ep_off).await.is_empty());
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_500_then_200_is_two_attempts_with_one_id_and_two_valid_signatures(pool: PgPool) {
    let ctx = setup(&pool);
    let receiver = TestServer::start_script(vec![status(500, "busy"), status(204, "")]).await;
    // Over a second apart, so the two timestamps differ.
    let (ep, secret) = ctx.endpoint(&url(&receiver), &["*"], &[1_100]).await;
    send(&pool, TENANT, "invoice.paid", json!({"n": 1})).await;
    ctx.drain().await;

    let requests = receiver.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    for request in &requests {
        verify(request, &secret).expect("each attempt is signed afresh");
    }
    let header = |i: usize, name: &str| requests[i].header(name).unwrap().to_owned();
    assert_eq!(header(0, "webhook-id"), header(1, "webhook-id"));
    assert_ne!(
        header(0, "webhook-timestamp"),
        header(1, "webhook-timestamp")
    );
    assert_eq!(
        (
            header(0, "sluice-webhook-attempt"),
            header(1, "sluice-webhook-attempt")
        ),
        ("1".into(), "2".into())
    );
    assert_eq!(
        requests[0].body, requests[1].body,
        "the body is byte-identical"
    );
    let delivered = ctx.deliveries(ep).await;
    let delivery = one(&delivered);
    assert_eq!(
        (
            delivery.state.as_str(),
            delivery.attempt,
            delivery.last_status
        ),
        ("completed", 2, Some(204))
    );
    let history: Vec<(i32, String, Option<String>)> = sqlx::query_as(
        "SELECT attempt, outcome::text, error FROM sluice.job_attempts WHERE job_id = $1 ORDER BY attempt",
    )
    .bind(delivery.id)
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(history[0].1, "retry");
    assert!(
        history[0]
            .2
            .as_deref()
            .unwrap()
            .starts_with("HTTP 500: busy"),
        "{history:?}"
    );
    assert_eq!(history[1].1, "completed");
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn redirects_forbidden_addresses_and_gone_endpoints_die_after_one_attempt(pool: PgPool) {
    let ctx = setup(&pool);
    let moved = TestServer::start(Reply::Respond {
        status: 302,
        headers: vec![("location".into(), "http://127.0.0.1:1/elsewhere".into())],
        body: vec![],
    })
    .await;
    let gone = TestServer::start(status(410, "gone")).await;
    let (ep_moved, _) = ctx.endpoint(&url(&moved), &["*"], &[100]).await;
    let (ep_gone, _) = ctx.endpoint(&url(&gone), &["*"], &[100]).await;
    let (ep_metadata, _) = ctx
        .endpoint("http://169.254.169.254/latest", &["*"], &[100])
        .await;
    let (ep_private, _) = ctx
        .endpoint("http://10.0.0.1:8080/hook", &["*"], &[100])
        .await;
    send(&pool, TENANT, "invoice.paid", json!({})).await;
    ctx.drain().await;

    let dead = |d: &[DeliveryInfo]| {
        let d = one(d).clone();
        assert_eq!((d.state.as_str(), d.attempt), ("dead", 1), "{d:?}");
        d.last_error.unwrap()
    };
    let error = dead(&ctx.deliveries(ep_moved).await);
    assert!(
        error.contains("redirect refused") && error.contains("302") && error.contains("/elsewhere"),
        "{error}"
    );
    assert_eq!(moved.requests().len(), 1, "the redirect is not followed");
    for ep in [ep_metadata, ep_private] {
        let error = dead(&ctx.deliveries(ep).await);
        assert!(error.contains("destination-IP-prohibited"), "{error}");
    }
    let error = dead(&ctx.deliveries(ep_gone).await);
    assert!(error.contains("410"), "{error}");
    let endpoint = ctx
        .store
        .get_webhook_endpoint(TENANT, ep_gone)
        .await
        .unwrap();
    assert!(!endpoint.enabled);
    assert!(endpoint.disabled_reason.unwrap().contains("410 Gone"));
    // A disabled endpoint gets no new deliveries.
    send(&pool, TENANT, "invoice.paid", json!({})).await;
    assert_eq!(ctx.deliveries(ep_gone).await.len(), 1);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_receiver_slower_than_the_timeout_is_retried(pool: PgPool) {
    let ctx = setup(&pool);
    let receiver = TestServer::start_script(vec![
        Reply::Delay(Duration::from_secs(5)),
        status(200, "ok"),
    ])
    .await;
    let (ep, secret) = ctx
        .endpoint_with(
            TENANT,
            &url(&receiver),
            &["*"],
            &[100],
            Some(Duration::from_millis(500)),
        )
        .await;
    send(&pool, TENANT, "invoice.paid", json!({})).await;
    ctx.drain().await;
    let delivered = ctx.deliveries(ep).await;
    let delivery = one(&delivered);
    assert_eq!(
        (delivery.state.as_str(), delivery.attempt),
        ("completed", 2)
    );
    let requests = receiver.requests();
    assert_eq!(requests.len(), 2);
    verify(&requests[1], &secret).unwrap();
    let first_error: String = sqlx::query_scalar(
        "SELECT error FROM sluice.job_attempts WHERE job_id = $1 AND attempt = 1",
    )
    .bind(delivery.id)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert!(first_error.contains("timeout"), "{first_error}");
}
