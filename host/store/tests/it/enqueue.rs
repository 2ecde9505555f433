//! Enqueue: defaults, validation (typed errors, nothing written), bulk all-or-nothing,
//! and bulk throughput.

use std::time::Instant;

use sluice_store::{JobState, KeyScope, NewJob, StoreError, TenantLimits};
use sqlx::PgPool;

use crate::common::*;

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn enqueue_stores_the_job_with_defaults(pool: PgPool) {
    let store = setup(&pool).await;
    let before = db_now(&pool).await;
    let e = store.enqueue(&job(r#"{"to":"a@b.c"}"#)).await.unwrap();
    assert!(e.created);
    let j = store.get(Some(TENANT), e.id).await.unwrap().unwrap();
    assert_eq!(j.state, JobState::Pending);
    assert_eq!(j.payload, br#"{"to":"a@b.c"}"#);
    assert_eq!(j.priority, 10);
    assert_eq!(j.attempt, 0);
    assert_eq!(j.max_attempts, 3, "job type default");
    assert_eq!(j.key_scope, KeyScope::Retained);
    assert!(j.run_at >= before && j.run_at <= db_now(&pool).await);
    assert!(j.finished_at.is_none() && j.locked_by.is_none() && j.output.is_none());

    let e = store.enqueue(&job("x").with_max_attempts(7)).await.unwrap();
    assert_eq!(
        store.get(None, e.id).await.unwrap().unwrap().max_attempts,
        7
    );
    let e = store
        .enqueue(&NewJob::new(TENANT, ONCE, "x"))
        .await
        .unwrap();
    assert_eq!(
        store.get(None, e.id).await.unwrap().unwrap().max_attempts,
        1
    );
}

/// Test 10: each bad input is refused with a typed error and writes nothing.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn bad_input_is_refused_with_typed_errors_and_nothing_written(pool: PgPool) {
    let store = setup(&pool).await;

    let err = store
        .enqueue(&NewJob::new("nobody", JOB, "x"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::UnknownTenant(t) if t == "nobody"),
        "{err}"
    );
    let err = store
        .enqueue(&NewJob::new("Not A Slug!", JOB, "x"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::UnknownTenant(_)), "{err}");

    let err = store
        .enqueue(&NewJob::new(TENANT, "", "x"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::InvalidInput {
                field: "job_type",
                ..
            }
        ),
        "{err}"
    );
    let err = store
        .enqueue(&NewJob::new(TENANT, "j".repeat(129), "x"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::InvalidInput {
                field: "job_type",
                ..
            }
        ),
        "{err}"
    );

    let err = store
        .enqueue(&NewJob::new(TENANT, "no-such-type", "x"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::UnknownJobType { tenant, job_type } if tenant == TENANT && job_type == "no-such-type"),
        "{err}"
    );
    // A job type of another tenant is unknown here.
    sqlx::query("DELETE FROM sluice.job_types WHERE tenant = $1 AND name = $2")
        .bind(TENANT)
        .bind(ONCE)
        .execute(&pool)
        .await
        .unwrap();
    let err = store
        .enqueue(&NewJob::new(TENANT, ONCE, "x"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::UnknownJobType { .. }), "{err}");

    let err = store
        .enqueue(&job("x").with_max_attempts(0))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::InvalidInput {
                field: "max_attempts",
                ..
            }
        ),
        "{err}"
    );
    let err = store
        .enqueue(&job("x").with_max_attempts(-3))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::InvalidInput {
                field: "max_attempts",
                ..
            }
        ),
        "{err}"
    );

    let err = store
        .enqueue(&job("x").with_priority(32768))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::InvalidInput {
                field: "priority",
                ..
            }
        ),
        "{err}"
    );
    let err = store
        .enqueue(&job("x").with_priority(-32769))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::InvalidInput {
                field: "priority",
                ..
            }
        ),
        "{err}"
    );

    let err = store
        .enqueue(&job("x").with_idempotency_key("", KeyScope::Retained))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::InvalidInput {
                field: "idempotency_key",
                ..
            }
        ),
        "{err}"
    );

    // Payload over the default limit (1 MiB)...
    let big = vec![b'x'; 1024 * 1024 + 1];
    let err = store
        .enqueue(&NewJob::new(TENANT, JOB, big.clone()))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::PayloadTooLarge {
                size: 1_048_577,
                limit: 1_048_576
            }
        ),
        "{err}"
    );
    // ...and over a tenant's own, smaller limit.
    store
        .set_tenant_limits(
            OTHER_TENANT,
            &TenantLimits {
                max_payload_bytes: Some(16),
                ..TenantLimits::default()
            },
        )
        .await
        .unwrap();
    let err = store
        .enqueue(&NewJob::new(OTHER_TENANT, JOB, vec![0u8; 17]))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::PayloadTooLarge {
                size: 17,
                limit: 16
            }
        ),
        "{err}"
    );

    assert_eq!(count_jobs(&pool).await, 0, "nothing was written");

    // The limits are inclusive, and the boundary values of priority are fine.
    store
        .enqueue(&NewJob::new(OTHER_TENANT, JOB, vec![0u8; 16]))
        .await
        .unwrap();
    store
        .enqueue(&NewJob::new(TENANT, JOB, vec![0u8; 1024 * 1024]))
        .await
        .unwrap();
    store
        .enqueue(&job("x").with_priority(i16::MAX.into()))
        .await
        .unwrap();
    store
        .enqueue(&job("x").with_priority(i16::MIN.into()))
        .await
        .unwrap();
    assert_eq!(count_jobs(&pool).await, 4);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn bulk_with_one_bad_row_writes_nothing(pool: PgPool) {
    let store = setup(&pool).await;
    let mut jobs: Vec<NewJob> = (0..100).map(|i| job(&i.to_string())).collect();
    jobs[57] = NewJob::new(TENANT, "no-such-type", "x");
    let err = store.enqueue_many(&jobs).await.unwrap_err();
    assert!(matches!(err, StoreError::UnknownJobType { .. }), "{err}");

    jobs[57] = NewJob::new(TENANT, JOB, vec![0u8; 2 * 1024 * 1024]);
    let err = store.enqueue_many(&jobs).await.unwrap_err();
    assert!(matches!(err, StoreError::PayloadTooLarge { .. }), "{err}");

    jobs[57] = job("fine").with_max_attempts(0);
    let err = store.enqueue_many(&jobs).await.unwrap_err();
    assert!(matches!(err, StoreError::InvalidInput { .. }), "{err}");
    assert_eq!(count_jobs(&pool).await, 0);

    jobs[57] = job("fine");
    let out = store.enqueue_many(&jobs).await.unwrap();
    assert_eq!(out.len(), 100);
    assert!(out.iter().all(|e| e.created));
    // Ids follow input order, so equal-priority jobs of a batch run in submission order.
    assert!(out.windows(2).all(|w| w[0].id < w[1].id));
    for (i, e) in out.iter().enumerate() {
        let j = store.get(None, e.id).await.unwrap().unwrap();
        assert_eq!(j.payload, jobs[i].payload);
    }
    assert!(store.enqueue_many(&[]).await.unwrap().is_empty());
}

/// 100k jobs in one call all land. Throughput is measured by `sluice bench enqueue`
/// (docs/benchmarks.md), never asserted in a test.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn bulk_enqueue_of_100k_jobs(pool: PgPool) {
    let store = setup(&pool).await;
    let jobs: Vec<NewJob> = (0..100_000)
        .map(|i| job(&format!(r#"{{"n":{i}}}"#)))
        .collect();
    let start = Instant::now();
    let out = store.enqueue_many(&jobs).await.unwrap();
    let elapsed = start.elapsed();
    eprintln!(
        "enqueue_many(100k): {elapsed:?} = {:.0} jobs/s",
        100_000.0 / elapsed.as_secs_f64()
    );
    assert_eq!(out.len(), 100_000);
    assert_eq!(count_jobs(&pool).await, 100_000);
}
