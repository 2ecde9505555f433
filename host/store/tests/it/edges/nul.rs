//! Text with U+0000: every writer refuses it naming the field, lookups by such a name
//! find nothing, a guest's message keeps it as U+FFFD, and jsonb refuses `\u0000`.

use sluice_store::{
    Failure, JobFilter, JobTypeSpec, NewComponent, NewJob, NewSchedule, StoreError, TenantLimits,
};
use sqlx::PgPool;

use super::refusal;
use crate::common::*;

/// Every text a store writer takes, with a NUL: refused, naming the field.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn every_text_a_writer_takes_is_refused_with_nul_naming_the_field(pool: PgPool) {
    let store = setup(&pool).await;
    let component = store
        .find_component(TENANT, "mailer", None)
        .await
        .unwrap()
        .unwrap();
    let schedule = |f: fn(&mut NewSchedule)| {
        let mut s = NewSchedule::new(TENANT, "nightly", "0 3 * * *", JOB);
        f(&mut s);
        s
    };
    let nul = "a\0b";
    let cases: Vec<(&str, Result<(), StoreError>)> = vec![
        (
            "job_type",
            store
                .enqueue(&NewJob::new(TENANT, nul, "{}"))
                .await
                .map(drop),
        ),
        (
            "idempotency_key",
            store
                .enqueue(&job("{}").with_idempotency_key(nul, Default::default()))
                .await
                .map(drop),
        ),
        (
            "component name",
            store
                .put_component(&NewComponent {
                    tenant: TENANT.into(),
                    name: nul.into(),
                    version: None,
                    bytes: b"x".to_vec(),
                    contract: 1,
                })
                .await
                .map(drop),
        ),
        (
            "component version",
            store
                .put_component(&NewComponent {
                    tenant: TENANT.into(),
                    name: "mailer".into(),
                    version: Some(nul.into()),
                    bytes: b"x".to_vec(),
                    contract: 1,
                })
                .await
                .map(drop),
        ),
        (
            "job_type",
            store
                .set_job_type(&JobTypeSpec::new(TENANT, nul, component.id))
                .await
                .map(drop),
        ),
        (
            "label",
            store.create_token(TENANT, false, Some(nul)).await.map(drop),
        ),
        (
            "name",
            store
                .create_schedule(&schedule(|s| s.name = "a\0b".into()))
                .await
                .map(drop),
        ),
        (
            "job_type",
            store
                .create_schedule(&schedule(|s| s.job_type = "a\0b".into()))
                .await
                .map(drop),
        ),
        (
            "cron",
            store
                .create_schedule(&schedule(|s| s.cron = "0 3 * * *\0".into()))
                .await
                .map(drop),
        ),
        (
            "tz",
            store
                .create_schedule(&schedule(|s| s.tz = "UTC\0".into()))
                .await
                .map(drop),
        ),
    ];
    for (field, result) in cases {
        match result {
            Err(StoreError::InvalidInput { field: got, .. }) => assert_eq!(got, field),
            other => panic!("{field}: expected InvalidInput, got {other:?}"),
        }
    }
    assert_eq!(count_jobs(&pool).await, 0, "nothing written");
}

/// A lookup by a name with NUL finds nothing (instead of failing in Postgres).
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn lookups_by_a_name_with_nul_find_nothing(pool: PgPool) {
    let store = setup(&pool).await;
    let id = store.enqueue(&job("{}")).await.unwrap().id;
    let nul = "a\0b";
    assert!(store.get_tenant(nul).await.unwrap().is_none());
    assert!(store.get_job_type(TENANT, nul).await.unwrap().is_none());
    assert!(
        store
            .find_component(TENANT, nul, None)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .find_component(TENANT, "mailer", Some(nul))
            .await
            .unwrap()
            .is_none()
    );
    assert!(store.get_schedule(TENANT, nul).await.unwrap().is_none());
    assert!(store.get(Some(nul), id).await.unwrap().is_none());
    assert!(store.attempts(Some(nul), id).await.unwrap().is_empty());
    assert!(store.list_job_types(Some(nul)).await.unwrap().is_empty());
    assert!(store.list_components(Some(nul)).await.unwrap().is_empty());
    assert!(store.list_schedules(Some(nul)).await.unwrap().is_empty());
    assert!(store.list_tokens(nul).await.unwrap().is_empty());
    assert_eq!(store.count_pending(Some(nul)).await.unwrap(), 0);
    assert_eq!(store.retry_dead(Some(TENANT), Some(nul)).await.unwrap(), 0);
    let filter = JobFilter {
        job_type: Some(nul.into()),
        ..JobFilter::default()
    };
    assert!(store.list(&filter).await.unwrap().is_empty());
    for result in [
        store.pause_schedule(TENANT, nul).await.map(drop),
        store.delete_schedule(TENANT, nul).await,
        store.resume_schedule(TENANT, nul).await.map(drop),
        store.cancel(Some(nul), id).await.map(drop),
        store.retry(Some(nul), id).await,
        store.revoke_token(nul, 1).await.map(drop),
    ] {
        assert!(
            matches!(result, Err(StoreError::NotFound { .. })),
            "{result:?}"
        );
    }
    assert!(matches!(
        store.set_tenant_max_running(nul, Some(1)).await,
        Err(StoreError::UnknownTenant(_))
    ));
    assert!(matches!(
        store.set_tenant_limits(nul, &TenantLimits::default()).await,
        Err(StoreError::UnknownTenant(_))
    ));
}

/// A guest's error message is the guest's to choose: a NUL in it is kept as U+FFFD
/// instead of failing the (batched) failure statement.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_failure_message_with_nul_is_recorded_with_a_replacement_character(pool: PgPool) {
    let store = setup(&pool).await;
    let id = store.enqueue(&job("{}")).await.unwrap().id;
    let claimed = claim_one(&store, "w1").await;
    store
        .fail(&claimed.lease, &Failure::fatal("guest fatal: bad\0byte"))
        .await
        .unwrap();
    let record = store.get(None, id).await.unwrap().unwrap();
    assert_eq!(
        record.last_error.as_deref(),
        Some("guest fatal: bad\u{FFFD}byte")
    );
}

/// jsonb itself refuses `\u0000` (22P05) before `sluice.enqueue` runs: a clean error
/// from Postgres, nothing written. (The HTTP API stores payloads as bytes, so there a
/// JSON string with `\u0000` is kept as sent.)
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_jsonb_payload_with_an_escaped_nul_is_refused_by_postgres(pool: PgPool) {
    setup(&pool).await;
    let (code, _, message) = refusal(
        &pool,
        r#"SELECT sluice.enqueue(tenant => 'acme', job_type => 'send-email', payload => '{"a":"\u0000"}')"#,
    )
    .await;
    assert_eq!(code, "22P05", "{message}");
    assert_eq!(count_jobs(&pool).await, 0);
}
