//! Webhooks and the operator's secrets key: `secrets rotate-key` re-seals endpoints'
//! signing secrets (and the previous ones they keep) with the tenant secrets, so a worker
//! given only the new key signs; and a worker without the key an endpoint's secret is
//! under leaves its deliveries pending, attempt unspent, for one that has it.

use super::*;
use crate::support::secrets::{key_id, ok, set_secret};

/// `sluice ARGS` with `new` as the current key and `old` as a previous one.
fn rotating(ctx: &Ctx, new: &str, old: &str, args: &[&str]) -> std::process::Command {
    let mut command = keyed(&ctx.sluice, Some(new), args);
    command.env("SLUICE_SECRETS_OLD_KEYS", old);
    command
}

/// `sluice worker --drain` given only `key`; returns once it exits, with its log.
async fn drain_with(ctx: &Ctx, key: &str) -> String {
    let args = [
        "worker",
        "--drain",
        "--drain-horizon",
        "1s",
        "--egress-allow-network",
        LOOPBACK,
    ];
    let mut worker = keyed(&ctx.sluice, Some(key), &args);
    worker.env_remove("SLUICE_SECRETS_OLD_KEYS");
    worker.env("SLUICE_LOG", "info");
    let out = tokio::task::spawn_blocking(move || output_of(worker, None))
        .await
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{log}");
    log
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn rotate_key_reseals_signing_secrets_and_a_worker_with_only_the_new_key_signs(pool: PgPool) {
    let ctx = setup(&pool);
    let receiver = TestServer::start(status(200, "ok")).await;
    let (ep, first) = ctx.endpoint(&url(&receiver), &["*"], &[]).await;
    // A rotated secret: the previous one keeps signing for an hour, sealed too.
    let (_, second) = rotate_secret(
        &ctx.store,
        Some(&ctx.keyring),
        TENANT,
        ep,
        Duration::from_secs(3600),
    )
    .await
    .unwrap();
    set_secret(&ctx.sluice, &ctx.key, TENANT, "API_TOKEN", "t0ken");

    let new = new_key();
    let args = ["--json", "secrets", "rotate-key", "--batch", "1"];
    let out = ok(rotating(&ctx, &new, &ctx.key, &args), None);
    let report: Value = serde_json::from_str(out.lines().last().unwrap()).expect("a JSON report");
    assert_eq!(report["key_id"], key_id(&new).as_str(), "{report}");
    assert_eq!(report["resealed"], 3, "{report}");
    let per_kind: Vec<(String, u64, u64)> = report["kinds"]
        .as_array()
        .unwrap_or_else(|| panic!("no kinds in {report}"))
        .iter()
        .map(|k| {
            (
                k["kind"].as_str().unwrap().to_owned(),
                k["resealed"].as_u64().unwrap(),
                k["left"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        per_kind,
        [
            ("tenant_secret".to_owned(), 1, 0),
            ("webhook_secret".to_owned(), 1, 0),
            ("webhook_previous_secret".to_owned(), 1, 0),
        ]
    );
    // Again, as text: nothing left to re-seal, each kind named.
    let text = ok(
        rotating(&ctx, &new, &ctx.key, &["secrets", "rotate-key"]),
        None,
    );
    for kind in [
        "tenant secrets",
        "webhook signing secrets",
        "previous webhook signing secrets",
    ] {
        assert!(
            text.lines()
                .any(|l| l.starts_with(kind) && l.ends_with("  0 re-sealed")),
            "{kind}: {text}"
        );
    }
    assert!(text.contains(&key_id(&new)), "{text}");
    let shown = ctx.store.get_webhook_endpoint(TENANT, ep).await.unwrap();
    assert_eq!(shown.key_id, key_id(&new));

    // The old key dropped: a worker holding only the new one signs with both secrets.
    send(&pool, TENANT, "invoice.paid", json!({"invoice": 7})).await;
    drain_with(&ctx, &new).await;
    let requests = receiver.requests();
    assert_eq!(requests.len(), 1, "{:?}", ctx.deliveries(ep).await);
    verify(&requests[0], &second).expect("signed with the current secret");
    verify(&requests[0], &first).expect("and with the previous one, in its grace");
    let delivery = one(&ctx.deliveries(ep).await).clone();
    assert_eq!(
        (delivery.state.as_str(), delivery.attempt),
        ("completed", 1),
        "{delivery:?}"
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_worker_without_the_endpoints_key_leaves_its_deliveries_pending(pool: PgPool) {
    let ctx = setup(&pool);
    let receiver = TestServer::start(status(200, "ok")).await;
    // No retries: a spent attempt would make the delivery dead at once.
    let (ep, secret) = ctx.endpoint(&url(&receiver), &["*"], &[]).await;
    send(&pool, TENANT, "invoice.paid", json!({})).await;

    let log = drain_with(&ctx, &new_key()).await;
    assert!(
        log.contains(&format!("1 under key id {}", ctx.keyring.current().id())),
        "the worker says what it cannot open: {log}"
    );
    let pending = one(&ctx.deliveries(ep).await).clone();
    assert_eq!(
        (pending.state.as_str(), pending.attempt),
        ("pending", 0),
        "{pending:?}"
    );
    assert!(receiver.requests().is_empty());

    // The right key: delivered, on its first attempt.
    drain_with(&ctx, &ctx.key).await;
    let requests = receiver.requests();
    assert_eq!(requests.len(), 1);
    verify(&requests[0], &secret).unwrap();
    let done = one(&ctx.deliveries(ep).await).clone();
    assert_eq!(
        (done.state.as_str(), done.attempt),
        ("completed", 1),
        "{done:?}"
    );
}
