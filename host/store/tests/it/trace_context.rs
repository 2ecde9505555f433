//! W3C trace context carried through the queue (migration 0034, docs/observability.md):
//! kept with a job however it is enqueued (Rust batches of every shape, `sluice.enqueue`),
//! returned by the claim with the time the job was due, refused by name when malformed,
//! handed by an event to its webhook deliveries, and given to follow-up jobs.

use sluice_secrets::{Keyring, SecretKey};
use sluice_store::{
    KeyScope, NewEndpoint, NewJob, SealedValue, StoreError, TraceHeaders, endpoint_secret_name,
};
use sqlx::PgPool;

use crate::common::*;

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const OTHER: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";

fn traced(parent: &str, state: Option<&str>) -> NewJob {
    NewJob::new(TENANT, JOB, b"{}".to_vec()).with_trace(TraceHeaders::new(parent, state).unwrap())
}

/// (traceparent, tracestate) of every claimed job, by id.
async fn claimed_traces(
    store: &sluice_store::Store,
) -> Vec<(i64, Option<(String, Option<String>)>)> {
    let mut claimed: Vec<_> = store
        .claim(&claim_req("w", 100))
        .await
        .unwrap()
        .into_iter()
        .map(|j| {
            assert!(j.due_at <= chrono::Utc::now(), "{j:?}");
            (j.id, j.trace.map(|t| (t.traceparent, t.tracestate)))
        })
        .collect();
    claimed.sort();
    claimed
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn every_shape_of_batch_keeps_each_jobs_context_and_the_claim_returns_it(pool: PgPool) {
    let store = setup(&pool).await;
    let plain = NewJob::new(TENANT, JOB, b"{}".to_vec());
    // One batch mixing traced and untraced jobs, keys, concurrency keys.
    let batch = vec![
        traced(PARENT, Some("a=1,b=2")),
        plain.clone(),
        traced(OTHER, None).with_idempotency_key("k1", KeyScope::Retained),
        traced(PARENT, None).with_concurrency_key("c"),
    ];
    let ids: Vec<i64> = store
        .enqueue_many(&batch)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    // A batch without any context takes the statements of before (no trace arrays).
    let untraced = store.enqueue(&plain).await.unwrap().id;
    let claimed = claimed_traces(&store).await;
    let expect =
        |parent: &str, state: Option<&str>| Some((parent.to_owned(), state.map(str::to_owned)));
    assert_eq!(
        claimed,
        vec![
            (ids[0], expect(PARENT, Some("a=1,b=2"))),
            (ids[1], None),
            (ids[2], expect(OTHER, None)),
            (ids[3], expect(PARENT, None)),
            (untraced, None),
        ]
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_malformed_traceparent_is_refused_by_name_and_a_malformed_tracestate_dropped(
    pool: PgPool,
) {
    let store = setup(&pool).await;
    let mut bad = NewJob::new(TENANT, JOB, b"{}".to_vec());
    bad.trace = Some(TraceHeaders {
        traceparent: "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01".into(),
        tracestate: None,
    });
    let err = store.enqueue(&bad).await.unwrap_err();
    assert!(
        matches!(
            &err,
            StoreError::InvalidInput {
                field: "traceparent",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("not lowercase hex"), "{err}");
    assert_eq!(
        TraceHeaders::new(PARENT, Some("no state"))
            .unwrap()
            .tracestate,
        None
    );
    let none: i64 = sqlx::query_scalar("SELECT count(*) FROM sluice.jobs")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(none, 0, "nothing written");
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn sql_enqueue_takes_a_traceparent_and_refuses_a_malformed_one(pool: PgPool) {
    let store = setup(&pool).await;
    let id: i64 = sqlx::query_scalar(
        "SELECT sluice.enqueue(tenant => $1, job_type => $2, payload => '{}'::jsonb, \
         traceparent => $3, tracestate => 'vendor=x')",
    )
    .bind(TENANT)
    .bind(JOB)
    .bind(PARENT)
    .fetch_one(&pool)
    .await
    .unwrap();
    // A call without the new parameters works as before.
    let plain: i64 = sqlx::query_scalar("SELECT sluice.enqueue($1, $2, '{}'::jsonb)")
        .bind(TENANT)
        .bind(JOB)
        .fetch_one(&pool)
        .await
        .unwrap();
    let err = sqlx::query(
        "SELECT sluice.enqueue('acme', 'send-email', '{}'::jsonb, traceparent => 'ff-x')",
    )
    .execute(&pool)
    .await
    .unwrap_err();
    let db = err.as_database_error().unwrap();
    assert!(
        db.message()
            .starts_with("invalid traceparent: 'ff-x' is not a W3C traceparent"),
        "{db}"
    );
    assert_eq!(
        claimed_traces(&store).await,
        vec![
            (id, Some((PARENT.to_owned(), Some("vendor=x".to_owned())))),
            (plain, None),
        ]
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn an_events_deliveries_carry_its_context(pool: PgPool) {
    let store = setup(&pool).await;
    let ring = Keyring::new(SecretKey::generate().unwrap(), Vec::new());
    let id = store.next_webhook_endpoint_id().await.unwrap();
    let sealed = ring
        .seal(TENANT, &endpoint_secret_name(id), "whsec_x")
        .unwrap();
    store
        .create_webhook_endpoint(
            id,
            &NewEndpoint {
                tenant: TENANT.into(),
                url: "https://hooks.example.com/x".into(),
                events: vec!["*".into()],
                ..NewEndpoint::default()
            },
            &SealedValue {
                key_id: sealed.key_id,
                nonce: sealed.nonce,
                ciphertext: sealed.ciphertext,
            },
        )
        .await
        .unwrap();
    let trace = TraceHeaders::new(PARENT, Some("a=1")).unwrap();
    store
        .send_event(
            TENANT,
            "invoice.paid",
            &serde_json::json!({}),
            None,
            Some(&trace),
        )
        .await
        .unwrap();
    store
        .send_event(TENANT, "invoice.void", &serde_json::json!({}), None, None)
        .await
        .unwrap();
    let rows: Vec<(Option<String>, Option<String>)> = sqlx::query_as(
        "SELECT traceparent, tracestate FROM sluice.jobs WHERE job_type = 'sluice.webhook' ORDER BY id",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(
        rows,
        vec![
            (Some(PARENT.to_owned()), Some("a=1".to_owned())),
            (None, None)
        ]
    );
    let bad = TraceHeaders {
        traceparent: "nope".into(),
        tracestate: None,
    };
    let err = store
        .send_event(
            TENANT,
            "invoice.paid",
            &serde_json::json!({}),
            None,
            Some(&bad),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::InvalidInput {
                field: "traceparent",
                ..
            }
        ),
        "{err}"
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn rust_and_sql_keep_the_same_tracestates(pool: PgPool) {
    let long_value = format!("k={}", "v".repeat(509));
    let too_long = format!("k={}", "v".repeat(510));
    let many = vec!["a=1"; 32].join(",");
    let too_many = vec!["a=1"; 33].join(",");
    let cases = [
        "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
        " a=1 ,\tb=2\t",
        "a=1,,b=2",
        "a=1,",
        "tenant@system=x y",
        "a=ends in space ",
        "",
        ",a=1",
        "=1",
        "a=",
        "a",
        "a=b=c",
        "A=1",
        "a=\u{7}",
        "a=é",
        "a=1, b =2",
        long_value.as_str(),
        too_long.as_str(),
        many.as_str(),
        too_many.as_str(),
    ];
    for case in cases {
        let sql: bool = sqlx::query_scalar("SELECT sluice.valid_tracestate($1)")
            .bind(case)
            .fetch_one(&pool)
            .await
            .unwrap();
        let rust = TraceHeaders::new(PARENT, Some(case))
            .unwrap()
            .tracestate
            .is_some();
        assert_eq!(rust, sql, "{case:?}: Rust keeps it {rust}, SQL {sql}");
    }
}
