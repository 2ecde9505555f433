//! Tenants, components and job types.

use std::time::Duration;

use sluice_store::{Backoff, JobTypeSpec, NewComponent, StoreError, TenantLimits};
use sqlx::PgPool;

use crate::common::*;

fn component(version: Option<&str>, bytes: &[u8]) -> NewComponent {
    NewComponent {
        tenant: TENANT.into(),
        name: "resizer".into(),
        version: version.map(Into::into),
        bytes: bytes.to_vec(),
        contract: 1,
    }
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn tenants_are_created_idempotently_and_validated(pool: PgPool) {
    let store = setup(&pool).await;
    store.create_tenant(TENANT).await.unwrap();
    let ids: Vec<String> = store
        .list_tenants()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(ids, vec![TENANT.to_string(), OTHER_TENANT.to_string()]);
    for bad in ["", "Acme", "-acme", "a b", &"a".repeat(64)] {
        let err = store.create_tenant(bad).await.unwrap_err();
        assert!(
            matches!(
                err,
                StoreError::InvalidInput {
                    field: "tenant",
                    ..
                }
            ),
            "{bad:?}: {err}"
        );
    }
    store.create_tenant(&"a".repeat(63)).await.unwrap();
    let limits = TenantLimits {
        max_fuel: Some(1_000_000),
        ..TenantLimits::default()
    };
    let t = store.set_tenant_limits(TENANT, &limits).await.unwrap();
    assert_eq!(t.limits, limits);
    assert_eq!(
        store.get_tenant(TENANT).await.unwrap().unwrap().limits,
        limits
    );
    let err = store
        .set_tenant_limits("nobody", &limits)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::UnknownTenant(_)));
    let bad = TenantLimits {
        max_payload_bytes: Some(0),
        ..TenantLimits::default()
    };
    assert!(matches!(
        store.set_tenant_limits(TENANT, &bad).await,
        Err(StoreError::InvalidInput {
            field: "max_payload_bytes",
            ..
        })
    ));
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn component_versions(pool: PgPool) {
    let store = setup(&pool).await;
    let v1 = store.put_component(&component(None, b"one")).await.unwrap();
    assert_eq!(v1.version, "1");
    assert_eq!(v1.size, 3);
    assert_eq!(
        v1.sha256,
        "7692c3ad3540bb803c020b3aee66cd8887123234ea0c6e7143c0add73ff431ed"
    );
    // Same bytes again: the same record.
    assert_eq!(
        store.put_component(&component(None, b"one")).await.unwrap(),
        v1
    );
    let v2 = store.put_component(&component(None, b"two")).await.unwrap();
    assert_eq!(v2.version, "2");
    let named = store
        .put_component(&component(Some("beta"), b"three"))
        .await
        .unwrap();
    assert_eq!(named.version, "beta");
    // Non-numeric versions do not disturb the numbering.
    assert_eq!(
        store
            .put_component(&component(None, b"four"))
            .await
            .unwrap()
            .version,
        "3"
    );
    // An explicit version is immutable.
    assert_eq!(
        store
            .put_component(&component(Some("beta"), b"three"))
            .await
            .unwrap(),
        named
    );
    let err = store
        .put_component(&component(Some("beta"), b"other"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Conflict {
                field: "component version",
                ..
            }
        ),
        "{err}"
    );

    assert_eq!(store.component_bytes(v2.id).await.unwrap().unwrap(), b"two");
    assert_eq!(store.get_component(v2.id).await.unwrap().unwrap(), v2);
    let latest = store
        .find_component(TENANT, "resizer", None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(latest.version, "3");
    let found = store
        .find_component(TENANT, "resizer", Some("2"))
        .await
        .unwrap();
    assert_eq!(found, Some(v2));
    assert!(
        store
            .find_component(OTHER_TENANT, "resizer", None)
            .await
            .unwrap()
            .is_none()
    );
    // setup() uploaded one "mailer" per tenant.
    assert_eq!(store.list_components(Some(TENANT)).await.unwrap().len(), 5);
    assert_eq!(store.list_components(None).await.unwrap().len(), 6);

    let mut unknown = component(None, b"x");
    unknown.tenant = "nobody".into();
    assert!(matches!(
        store.put_component(&unknown).await,
        Err(StoreError::UnknownTenant(_))
    ));
    assert!(matches!(
        store.put_component(&component(None, b"")).await,
        Err(StoreError::InvalidInput { .. })
    ));
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn job_types_upsert_and_stay_within_their_tenant(pool: PgPool) {
    let store = setup(&pool).await;
    let mine = store.put_component(&component(None, b"v1")).await.unwrap();
    let mut spec = JobTypeSpec::new(TENANT, "resize", mine.id);
    spec.backoff_base = Some(Duration::from_millis(500));
    spec.timeout = Some(Duration::from_secs(30));
    spec.fuel = Some(5_000_000);
    let rec = store.set_job_type(&spec).await.unwrap();
    assert_eq!(rec.max_attempts, 3);
    assert_eq!(rec.backoff_base_ms, Some(500));
    assert_eq!(rec.timeout(), Some(Duration::from_secs(30)));
    assert_eq!(
        rec.backoff(Backoff::default()),
        Backoff {
            base: Duration::from_millis(500),
            ..Backoff::default()
        }
    );
    spec.max_attempts = 5;
    spec.fuel = None;
    let rec = store.set_job_type(&spec).await.unwrap();
    assert_eq!((rec.max_attempts, rec.fuel), (5, None));
    assert_eq!(
        store.get_job_type(TENANT, "resize").await.unwrap(),
        Some(rec)
    );
    assert_eq!(store.list_job_types(Some(TENANT)).await.unwrap().len(), 3);

    // A component of another tenant cannot be used.
    let theirs = store
        .find_component(OTHER_TENANT, "mailer", None)
        .await
        .unwrap()
        .unwrap();
    let err = store
        .set_job_type(&JobTypeSpec::new(TENANT, "steal", theirs.id))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::NotFound {
                entity: "component",
                ..
            }
        ),
        "{err}"
    );
    let err = store
        .set_job_type(&JobTypeSpec::new("nobody", "x", theirs.id))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::UnknownTenant(_)), "{err}");
    let err = store
        .set_job_type(&JobTypeSpec::new(TENANT, "", mine.id))
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
    let mut zero = JobTypeSpec::new(TENANT, "z", mine.id);
    zero.max_attempts = 0;
    assert!(matches!(
        store.set_job_type(&zero).await,
        Err(StoreError::InvalidInput {
            field: "max_attempts",
            ..
        })
    ));
}
