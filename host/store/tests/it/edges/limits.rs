//! Durations and caps at their bounds: a zero timeout means "none", a backoff over a
//! hundred years is refused, and a tenant cap of 0 or less is refused naming it.

use std::time::Duration;

use sluice_store::{Failure, JobTypeSpec, MAX_DELAY, RUN_AT_MAX, StoreError, TenantLimits};
use sqlx::PgPool;

use super::invalid_field;
use crate::common::*;

/// A type's timeout of zero means "none" (fuel still bounds the attempt); under 1 ms
/// (other than zero) is refused rather than rounded to "none"; a tenant with a timeout
/// cap cannot have "none".
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_zero_timeout_means_none_and_is_refused_above_a_tenant_cap(pool: PgPool) {
    let store = setup(&pool).await;
    let component = store
        .find_component(TENANT, "mailer", None)
        .await
        .unwrap()
        .unwrap();
    let spec = |timeout| JobTypeSpec {
        timeout: Some(timeout),
        ..JobTypeSpec::new(TENANT, "unbounded", component.id)
    };
    let record = store
        .set_job_type_within_limits(&spec(Duration::ZERO))
        .await
        .unwrap();
    assert_eq!(record.timeout_ms, Some(0));
    assert_eq!(record.timeout(), Some(Duration::ZERO));
    let result = store.set_job_type(&spec(Duration::from_micros(500))).await;
    assert_eq!(invalid_field(result), "timeout");

    store
        .set_tenant_limits(
            TENANT,
            &TenantLimits {
                max_timeout_ms: Some(60_000),
                ..TenantLimits::default()
            },
        )
        .await
        .unwrap();
    let result = store
        .set_job_type_within_limits(&spec(Duration::ZERO))
        .await;
    assert_eq!(invalid_field(result), "timeout");
    store
        .set_job_type_within_limits(&spec(Duration::from_secs(60)))
        .await
        .unwrap();
}

/// A job type's backoff is a delay like any other: over 100 years it is refused, so a
/// retry can never land outside the range (or overflow the failure statement).
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_backoff_over_a_hundred_years_is_refused(pool: PgPool) {
    let store = setup(&pool).await;
    let component = store
        .find_component(TENANT, "mailer", None)
        .await
        .unwrap()
        .unwrap();
    let too_long = MAX_DELAY + Duration::from_secs(1);
    let base = JobTypeSpec {
        backoff_base: Some(too_long),
        ..JobTypeSpec::new(TENANT, "slow", component.id)
    };
    assert_eq!(
        invalid_field(store.set_job_type(&base).await),
        "backoff_base"
    );
    let cap = JobTypeSpec {
        backoff_cap: Some(too_long),
        ..JobTypeSpec::new(TENANT, "slow", component.id)
    };
    assert_eq!(invalid_field(store.set_job_type(&cap).await), "backoff_cap");

    // A failure reported with an oversized backoff (a type stored before the bound) is
    // clamped, not lost.
    let id = store.enqueue(&job("{}")).await.unwrap().id;
    let claimed = claim_one(&store, "w1").await;
    let mut failure = Failure::retry("again");
    failure.backoff.base = Duration::MAX;
    failure.backoff.cap = Duration::MAX;
    store.fail(&claimed.lease, &failure).await.unwrap();
    let record = store.get(None, id).await.unwrap().unwrap();
    assert!(record.run_at <= RUN_AT_MAX);
}

/// A tenant cap of 0 or less is refused naming the cap and how to unset it (in the
/// surfaces' words, not Rust's), for every cap and for the enqueue rate and burst; no
/// limit is written.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_tenant_cap_that_is_not_positive_is_refused_naming_it_and_how_to_unset_it(pool: PgPool) {
    let store = setup(&pool).await;
    let refused = |limits: TenantLimits| {
        let store = store.clone();
        async move {
            match store.set_tenant_limits(TENANT, &limits).await {
                Err(StoreError::InvalidInput { field, message }) => (field, message),
                other => panic!("expected a refusal, got {other:?}"),
            }
        }
    };
    let (field, message) = refused(TenantLimits {
        max_journal_bytes: Some(0),
        ..TenantLimits::default()
    })
    .await;
    assert_eq!(field, "max_journal_bytes");
    assert!(
        message.contains("not positive")
            && message.contains("--unset")
            && !message.contains("None"),
        "{message}"
    );
    let (field, message) = refused(TenantLimits {
        max_enqueue_per_sec: Some(0.0),
        ..TenantLimits::default()
    })
    .await;
    assert_eq!(field, "max_enqueue_per_sec");
    assert!(message.contains("unset it for no limit"), "{message}");
    let (field, _) = refused(TenantLimits {
        enqueue_burst: Some(-1),
        ..TenantLimits::default()
    })
    .await;
    assert_eq!(field, "enqueue_burst");
    let tenant = store.get_tenant(TENANT).await.unwrap().unwrap();
    assert_eq!(tenant.limits.max_journal_bytes, None, "nothing was written");
}
