//! Trace context on webhook deliveries (docs/observability.md): an event sent with a
//! `traceparent` is delivered with one of the same trace (the delivery attempt's span as
//! the parent) and its `tracestate`, still signed as before; an event without one is
//! delivered without the headers (a worker that does not trace adds nothing).

use super::*;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn an_events_trace_context_reaches_its_receiver(pool: PgPool) {
    let ctx = setup(&pool);
    let receiver = TestServer::start(status(200, "ok")).await;
    let (_, secret) = ctx.endpoint(&url(&receiver), &["*"], &[]).await;
    let traced: i64 = sqlx::query_scalar(
        "SELECT sluice.send_event($1, 'invoice.paid', '{}'::jsonb, \
         traceparent => $2, tracestate => 'acme=7')",
    )
    .bind(TENANT)
    .bind(format!("00-{TRACE_ID}-00f067aa0ba902b7-01"))
    .fetch_one(&pool)
    .await
    .unwrap();
    let plain = send(&pool, TENANT, "invoice.void", json!({})).await;
    ctx.drain().await;

    let requests = receiver.requests();
    assert_eq!(requests.len(), 2);
    let of = |event: i64| {
        requests
            .iter()
            .find(|r| {
                r.header("webhook-id")
                    .unwrap()
                    .starts_with(&format!("msg_{event}_"))
            })
            .unwrap()
    };
    let sent = of(traced);
    verify(sent, &secret).expect("still signed");
    let parent = sent.header("traceparent").expect("a traceparent");
    assert!(parent.starts_with(&format!("00-{TRACE_ID}-")), "{parent}");
    assert!(parent.ends_with("-01"), "{parent}");
    assert_ne!(
        &parent[36..52],
        "00f067aa0ba902b7",
        "the delivery's own span is the parent"
    );
    assert_eq!(sent.header("tracestate"), Some("acme=7"));
    let bare = of(plain);
    assert_eq!(
        (bare.header("traceparent"), bare.header("tracestate")),
        (None, None)
    );
}
