//! Webhooks across boundaries: tenants kept apart, a worker killed mid-delivery, and
//! events a task sends with its completion (`sluice.event` follow-ups).

use super::*;

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn another_tenant_can_neither_reach_nor_receive_these_deliveries(pool: PgPool) {
    let ctx = setup(&pool);
    ctx.sluice.ok(&["tenants", "create", "beta"]);
    let receiver = TestServer::start(status(200, "ok")).await;
    let (ep, _) = ctx.endpoint(&url(&receiver), &["*"], &[]).await;
    send(&pool, TENANT, "invoice.paid", json!({})).await;
    let delivery = one(&ctx.deliveries(ep).await).id;

    let not_found = |r: Result<_, StoreError>| matches!(r, Err(StoreError::NotFound { .. }));
    let s = &ctx.store;
    assert!(not_found(
        s.get_webhook_endpoint("beta", ep).await.map(|_| ())
    ));
    assert!(not_found(
        s.update_webhook_endpoint("beta", ep, &EndpointUpdate::default())
            .await
            .map(|_| ())
    ));
    assert!(not_found(s.delete_webhook_endpoint("beta", ep).await));
    assert!(not_found(s.redeliver("beta", delivery).await.map(|_| ())));
    assert!(not_found(
        s.webhook_delivery("beta", delivery).await.map(|_| ())
    ));
    assert!(not_found(
        s.send_test_event("beta", ep, &json!({})).await.map(|_| ())
    ));
    assert!(not_found(
        rotate_secret(s, Some(&ctx.keyring), "beta", ep, Duration::ZERO)
            .await
            .map_err(|e| match e {
                sluice_shared::webhooks::EndpointError::Store(e) => e,
                other => panic!("{other}"),
            })
            .map(|_| ())
    ));
    assert!(s.list_webhook_endpoints("beta").await.unwrap().is_empty());
    assert!(
        s.webhook_deliveries("beta", ep, 10)
            .await
            .unwrap()
            .is_empty()
    );
    // beta's events never go to acme's endpoints, even with `*`.
    send(&pool, "beta", "invoice.paid", json!({})).await;
    assert_eq!(ctx.deliveries(ep).await.len(), 1);
    ctx.drain().await;
    assert_eq!(receiver.requests().len(), 1);
    // The owner can redeliver: the same webhook-id again.
    s.redeliver(TENANT, delivery).await.unwrap();
    ctx.drain().await;
    let requests = receiver.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].header("webhook-id"),
        requests[1].header("webhook-id")
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_worker_killed_mid_delivery_is_followed_by_one_with_the_same_id(pool: PgPool) {
    let ctx = setup(&pool);
    let receiver = TestServer::start_script(vec![Reply::Hold, status(200, "ok")]).await;
    // One retry: the attempt the crash cost is counted when its lease is reaped.
    let (ep, secret) = ctx.endpoint(&url(&receiver), &["*"], &[100]).await;
    send(&pool, TENANT, "invoice.paid", json!({})).await;
    let args = ["--lease", "3s", "--egress-allow-network", LOOPBACK];
    let key = [("SLUICE_SECRETS_KEY", ctx.key.as_str())];
    let mut first = WorkerProcess::spawn_env(&ctx.sluice, "doomed", &args, &key);
    wait_for(
        "the first attempt to reach the receiver",
        Duration::from_secs(30),
        || async { (!receiver.requests().is_empty()).then_some(()) },
    )
    .await;
    first.kill();
    // A new worker reaps the expired lease and sends again.
    let heir = [
        "--reap-interval",
        "500ms",
        "--egress-allow-network",
        LOOPBACK,
    ];
    let mut second = WorkerProcess::spawn_env(&ctx.sluice, "heir", &heir, &key);
    wait_for(
        "the delivery to complete",
        Duration::from_secs(60),
        || async {
            let d = ctx.deliveries(ep).await;
            (d.first().is_some_and(|d| d.state == "completed")).then_some(())
        },
    )
    .await;
    second.kill();
    let requests = receiver.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].header("webhook-id"),
        requests[1].header("webhook-id")
    );
    verify(&requests[1], &secret).unwrap();
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_task_sends_an_event_with_its_completion_and_only_then(pool: PgPool) {
    let ctx = setup(&pool);
    let receiver = TestServer::start(status(200, "ok")).await;
    let (ep, secret) = ctx.endpoint(&url(&receiver), &["invoice.*"], &[]).await;
    let file = crate::support::sample("fan-out");
    let t = ["--tenant", TENANT];
    let push = [
        &t[..],
        &[
            "component",
            "push",
            file.to_str().unwrap(),
            "--name",
            "fan-out",
        ],
    ]
    .concat();
    ctx.sluice.ok(&push);
    ctx.sluice.ok(&[
        &t[..],
        &["types", "set", "fan-out", "--component", "fan-out"],
    ]
    .concat());
    let event = json!({"type": "invoice.paid", "payload": {"from": "task"}});
    // The first attempt asks for the event, then fails: nothing may be sent for it.
    let args = json!({"type": "sluice.event", "count": 1, "payload": event, "retry_first": true})
        .to_string();
    let enqueue = [&t[..], &["enqueue", "fan-out", "--payload", &args]].concat();
    ctx.sluice.json(&enqueue);
    // A malformed event request is refused when the task asks, naming the problem.
    let bad = json!({"type": "sluice.event", "count": 1, "payload": {"kind": "x"}}).to_string();
    let bad_job = ctx
        .sluice
        .json(&[&t[..], &["enqueue", "fan-out", "--payload", &bad]].concat());
    ctx.drain().await;

    let requests = receiver.requests();
    assert_eq!(
        requests.len(),
        1,
        "one event, from the attempt that completed"
    );
    verify(&requests[0], &secret).unwrap();
    let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(
        (body["type"].as_str(), &body["data"]),
        (Some("invoice.paid"), &json!({"from": "task"}))
    );
    assert_eq!(ctx.deliveries(ep).await.len(), 1);
    let bad_id = bad_job["id"].as_i64().unwrap().to_string();
    let shown = ctx
        .sluice
        .json(&["--tenant", TENANT, "jobs", "show", &bad_id]);
    let error = shown["last_error"].as_str().unwrap_or_default().to_owned();
    assert!(
        error.contains("sluice.event") || error.contains("type"),
        "{shown}"
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_tenant_has_at_most_a_hundred_endpoints(pool: PgPool) {
    let ctx = setup(&pool);
    for _ in 0..sluice_store::MAX_ENDPOINTS_PER_TENANT {
        ctx.endpoint("https://example.com/hook", &["*"], &[]).await;
    }
    let spec = NewEndpoint {
        tenant: TENANT.into(),
        url: "https://example.com/one-more".into(),
        events: vec!["*".into()],
        ..NewEndpoint::default()
    };
    let refused = create_endpoint(&ctx.store, Some(&ctx.keyring), &spec)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("already has 100 webhook endpoints"),
        "{refused}"
    );
    assert_eq!(
        ctx.store
            .list_webhook_endpoints(TENANT)
            .await
            .unwrap()
            .len(),
        100
    );
    // Another tenant is not affected.
    ctx.sluice.ok(&["tenants", "create", "beta"]);
    ctx.endpoint_with("beta", "https://example.com/hook", &["*"], &[], None)
        .await;
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn deliveries_are_counted_in_the_metrics(pool: PgPool) {
    let ctx = setup(&pool);
    let receiver = TestServer::start_script(vec![status(503, "later"), status(200, "ok")]).await;
    let (ep, _) = ctx.endpoint(&url(&receiver), &["*"], &[100]).await;
    send(&pool, TENANT, "invoice.paid", json!({})).await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen = format!("127.0.0.1:{port}");
    let args = [
        "--egress-allow-network",
        LOOPBACK,
        "--metrics-listen",
        listen.as_str(),
    ];
    let key = [("SLUICE_SECRETS_KEY", ctx.key.as_str())];
    let mut worker = WorkerProcess::spawn_env(&ctx.sluice, "counted", &args, &key);
    wait_for(
        "the delivery to complete",
        Duration::from_secs(30),
        || async {
            let d = ctx.deliveries(ep).await;
            d.first()
                .is_some_and(|d| d.state == "completed")
                .then_some(())
        },
    )
    .await;
    let text = crate::support::http_get(format!("http://{listen}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    worker.kill();
    let line = |prefix: &str, labels: &[&str]| {
        text.lines()
            .find(|l| l.starts_with(prefix) && labels.iter().all(|want| l.contains(want)))
            .unwrap_or_else(|| panic!("no {prefix} with {labels:?} in:\n{text}"))
            .rsplit(' ')
            .next()
            .unwrap()
            .parse::<f64>()
            .unwrap()
    };
    let webhook = r#"job_type="sluice.webhook""#;
    assert_eq!(
        line(
            "sluice_webhook_responses_total",
            &[webhook, r#"outcome="5xx""#]
        ),
        1.0
    );
    assert_eq!(
        line(
            "sluice_webhook_responses_total",
            &[webhook, r#"outcome="2xx""#]
        ),
        1.0
    );
    assert_eq!(
        line("sluice_http_requests_total", &[webhook, r#"outcome="ok""#]),
        2.0
    );
    assert_eq!(
        line(
            "sluice_jobs_completed_total",
            &[webhook, r#"tenant="acme""#]
        ),
        1.0
    );
    assert_eq!(
        line("sluice_jobs_retried_total", &[webhook, r#"tenant="acme""#]),
        1.0
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_worker_without_the_secrets_key_leaves_deliveries_pending(pool: PgPool) {
    let ctx = setup(&pool);
    let receiver = TestServer::start(status(200, "ok")).await;
    let (ep, _) = ctx.endpoint(&url(&receiver), &["*"], &[]).await;
    send(&pool, TENANT, "invoice.paid", json!({})).await;
    // A keyless `--drain` worker finds the delivery due but never claims it; it must not
    // wait for it forever: once due jobs stay unclaimable past its drain horizon, it exits.
    let args = [
        "worker",
        "--drain",
        "--drain-horizon",
        "1s",
        "--egress-allow-network",
        LOOPBACK,
    ];
    let mut keyless = crate::support::secrets::keyed(&ctx.sluice, None, &args);
    let started = std::time::Instant::now();
    let mut child = keyless
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run sluice worker");
    let exited = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(30) {
            child.kill().unwrap();
            panic!(
                "a keyless --drain worker did not exit while only a delivery it cannot sign waits"
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(exited.success(), "{exited}");
    let waiting = ctx.deliveries(ep).await;
    assert_eq!(
        (waiting[0].state.as_str(), waiting[0].attempt),
        ("pending", 0),
        "a host that cannot sign neither sends nor spends an attempt"
    );
    assert_eq!(receiver.accepts(), 0);
    ctx.drain().await;
    assert_eq!(ctx.deliveries(ep).await[0].state, "completed");
}
