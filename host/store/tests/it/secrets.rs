//! Tenant secrets as rows: set, replace, list (never values), delete; isolation between
//! tenants; sealed values bound to their tenant and name; the claim leaving types granted
//! secrets pending on a host that cannot open them; rotate-key's guarded batches.

use sluice_secrets::{Keyring, OpenError, Sealed, SecretKey};
use sluice_store::{JobTypeSpec, Resealed, SealedKind, SealedSecret, Store, StoreError};
use sqlx::PgPool;

use crate::common::*;

fn keyring() -> Keyring {
    Keyring::new(SecretKey::generate().unwrap(), Vec::new())
}

async fn set(store: &Store, ring: &Keyring, tenant: &str, name: &str, value: &str) {
    let sealed = ring.seal(tenant, name, value).unwrap();
    store
        .set_secret(
            tenant,
            name,
            &sealed.key_id,
            &sealed.nonce,
            &sealed.ciphertext,
            value.len(),
        )
        .await
        .unwrap();
}

fn as_sealed(row: &SealedSecret) -> Sealed {
    Sealed {
        key_id: row.key_id.clone(),
        nonce: row.nonce.clone(),
        ciphertext: row.ciphertext.clone(),
    }
}

async fn open(store: &Store, ring: &Keyring, tenant: &str, name: &str) -> Option<String> {
    let rows = store
        .sealed_secrets(tenant, &[name.to_owned()])
        .await
        .unwrap();
    rows.first()
        .map(|row| ring.open(tenant, name, &as_sealed(row)).unwrap())
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn secrets_are_set_replaced_listed_without_values_and_deleted(pool: PgPool) {
    let store = setup(&pool).await;
    let ring = keyring();
    set(&store, &ring, TENANT, "STRIPE_KEY", "sk_live_1").await;
    set(&store, &ring, TENANT, "A_TOKEN", "").await;
    let first = store.list_secrets(TENANT).await.unwrap();
    assert_eq!(
        first
            .iter()
            .map(|s| (s.name.as_str(), s.size))
            .collect::<Vec<_>>(),
        [("A_TOKEN", 0), ("STRIPE_KEY", 9)]
    );
    assert!(first.iter().all(|s| s.key_id == ring.current().id()));
    assert_eq!(
        open(&store, &ring, TENANT, "STRIPE_KEY").await.unwrap(),
        "sk_live_1"
    );

    set(&store, &ring, TENANT, "STRIPE_KEY", "sk_live_22").await;
    let replaced = store.list_secrets(TENANT).await.unwrap();
    assert_eq!(replaced[1].size, 10);
    assert_eq!(replaced[1].created_at, first[1].created_at);
    assert!(replaced[1].updated_at >= first[1].updated_at);
    assert_eq!(
        open(&store, &ring, TENANT, "STRIPE_KEY").await.unwrap(),
        "sk_live_22"
    );

    assert!(store.delete_secret(TENANT, "STRIPE_KEY").await.unwrap());
    assert!(!store.delete_secret(TENANT, "STRIPE_KEY").await.unwrap());
    assert_eq!(store.list_secrets(TENANT).await.unwrap().len(), 1);
    assert!(open(&store, &ring, TENANT, "STRIPE_KEY").await.is_none());

    // Names and sizes are checked before anything is written; the field is named.
    let bad = store
        .set_secret(TENANT, "1BAD", "0011223344556677", &[0; 12], &[0; 16], 0)
        .await;
    assert!(
        matches!(bad, Err(StoreError::InvalidInput { field: "name", .. })),
        "{bad:?}"
    );
    let big = sluice_store::MAX_SECRET_BYTES + 1;
    let bad = store
        .set_secret(TENANT, "BIG", "0011223344556677", &[0; 12], &[0; 16], big)
        .await;
    assert!(
        matches!(bad, Err(StoreError::InvalidInput { field: "value", .. })),
        "{bad:?}"
    );
    let unknown = store
        .set_secret("nobody", "X", "0011223344556677", &[0; 12], &[0; 16], 0)
        .await;
    assert!(
        matches!(unknown, Err(StoreError::UnknownTenant(_))),
        "{unknown:?}"
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_tenant_never_sees_or_deletes_another_tenants_secrets(pool: PgPool) {
    let store = setup(&pool).await;
    let ring = keyring();
    set(&store, &ring, TENANT, "SHARED_NAME", "acme-value").await;
    assert!(store.list_secrets(OTHER_TENANT).await.unwrap().is_empty());
    assert!(
        store
            .sealed_secrets(OTHER_TENANT, &["SHARED_NAME".into()])
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        !store
            .delete_secret(OTHER_TENANT, "SHARED_NAME")
            .await
            .unwrap()
    );
    set(&store, &ring, OTHER_TENANT, "SHARED_NAME", "globex-value").await;
    assert_eq!(
        open(&store, &ring, TENANT, "SHARED_NAME").await.unwrap(),
        "acme-value"
    );
    assert_eq!(
        open(&store, &ring, OTHER_TENANT, "SHARED_NAME")
            .await
            .unwrap(),
        "globex-value"
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_ciphertext_copied_to_another_tenant_or_name_does_not_open(pool: PgPool) {
    let store = setup(&pool).await;
    let ring = keyring();
    set(&store, &ring, TENANT, "STRIPE_KEY", "sk_live_1").await;
    // Copy the row with SQL, as someone with database access would.
    for (tenant, name) in [(OTHER_TENANT, "STRIPE_KEY"), (TENANT, "OTHER_NAME")] {
        sqlx::query(
            "INSERT INTO sluice.secrets (tenant, name, key_id, nonce, ciphertext, size) \
             SELECT $1, $2, key_id, nonce, ciphertext, size FROM sluice.secrets \
             WHERE tenant = $3 AND name = 'STRIPE_KEY'",
        )
        .bind(tenant)
        .bind(name)
        .bind(TENANT)
        .execute(&pool)
        .await
        .unwrap();
        let rows = store
            .sealed_secrets(tenant, &[name.to_owned()])
            .await
            .unwrap();
        let err = ring.open(tenant, name, &as_sealed(&rows[0])).unwrap_err();
        assert!(
            matches!(err, OpenError::Corrupt { .. }),
            "{tenant}/{name}: {err}"
        );
    }
    // The original still opens; no column holds the plain value.
    assert_eq!(
        open(&store, &ring, TENANT, "STRIPE_KEY").await.unwrap(),
        "sk_live_1"
    );
    let plain: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM sluice.secrets WHERE position('sk_live_1'::bytea IN ciphertext) > 0",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(plain, 0);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn grants_are_validated_and_stored_on_the_job_type(pool: PgPool) {
    let store = setup(&pool).await;
    let component = store
        .get_job_type(TENANT, JOB)
        .await
        .unwrap()
        .unwrap()
        .component_id;
    let mut spec = JobTypeSpec::new(TENANT, "pay", component);
    spec.secrets = vec!["STRIPE_KEY".into(), "not-a-name".into()];
    let err = store.set_job_type(&spec).await.unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::InvalidInput {
                field: "secrets",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("not-a-name"), "{err}");
    spec.secrets = vec!["STRIPE_KEY".into()];
    let record = store.set_job_type(&spec).await.unwrap();
    assert_eq!(record.secrets, ["STRIPE_KEY"]);
    assert!(
        store
            .get_job_type(TENANT, JOB)
            .await
            .unwrap()
            .unwrap()
            .secrets
            .is_empty()
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn types_granted_secrets_stay_pending_on_a_host_that_cannot_open_them(pool: PgPool) {
    let store = setup(&pool).await;
    let ring = keyring();
    let component = store
        .get_job_type(TENANT, JOB)
        .await
        .unwrap()
        .unwrap()
        .component_id;
    let mut spec = JobTypeSpec::new(TENANT, "pay", component);
    spec.secrets = vec!["STRIPE_KEY".into(), "NOT_SET_YET".into()];
    store.set_job_type(&spec).await.unwrap();
    let plain = store.enqueue(&job("plain")).await.unwrap().id;
    let pay = store
        .enqueue(&sluice_store::NewJob::new(TENANT, "pay", b"{}".as_slice()))
        .await
        .unwrap()
        .id;
    // No key: only the plain job. Through the six-argument claim of earlier binaries too.
    let claimed = store.claim(&claim_req("keyless", 10)).await.unwrap();
    assert_eq!(claimed.iter().map(|j| j.id).collect::<Vec<_>>(), [plain]);
    let old: Vec<i64> = sqlx::query_scalar(
        "SELECT id FROM sluice.claim('old', 10, 60000000, NULL, NULL, 2::smallint)",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert!(old.is_empty(), "{old:?}");
    // A granted secret under another key than the host holds: still pending.
    let other = keyring();
    set(&store, &other, TENANT, "STRIPE_KEY", "v").await;
    let mut req = claim_req("keyed", 10);
    req.secret_keys = ring.ids();
    assert!(store.claim(&req).await.unwrap().is_empty());
    // Under a key it holds (an unset granted name does not hold it back): claimed.
    set(&store, &ring, TENANT, "STRIPE_KEY", "v").await;
    let claimed = store.claim(&req).await.unwrap();
    assert_eq!(
        claimed
            .iter()
            .map(|j| (j.id, j.attempt))
            .collect::<Vec<_>>(),
        [(pay, 1)]
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn resealing_walks_rows_in_batches_and_never_overwrites_a_newer_value(pool: PgPool) {
    let store = setup(&pool).await;
    let old = keyring();
    for i in 0..5 {
        set(
            &store,
            &old,
            TENANT,
            &format!("S{i}"),
            &format!("value-{i}"),
        )
        .await;
    }
    let new = Keyring::new(SecretKey::generate().unwrap(), vec![old.current().clone()]);
    let new_id = new.current().id().to_owned();
    let first = store.secrets_not_under_key(&new_id, None, 3).await.unwrap();
    assert_eq!(
        first.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
        ["S0", "S1", "S2"]
    );
    // S1 is set again (under the new key) between the read and the write.
    set(&store, &new, TENANT, "S1", "newer").await;
    let batch: Vec<Resealed> = first
        .iter()
        .map(|row| {
            let value = new.open(&row.tenant, &row.name, &as_sealed(row)).unwrap();
            let sealed = new.seal(&row.tenant, &row.name, &value).unwrap();
            Resealed {
                old: row.clone(),
                nonce: sealed.nonce,
                ciphertext: sealed.ciphertext,
            }
        })
        .collect();
    assert_eq!(store.reseal_secrets(&new_id, &batch).await.unwrap(), 2);
    assert_eq!(open(&store, &new, TENANT, "S1").await.unwrap(), "newer");
    assert_eq!(open(&store, &new, TENANT, "S2").await.unwrap(), "value-2");
    let last = &first[2];
    let rest = store
        .secrets_not_under_key(&new_id, Some((&last.tenant, &last.name)), 3)
        .await
        .unwrap();
    assert_eq!(
        rest.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
        ["S3", "S4"]
    );
    let counts = store.sealed_key_counts().await.unwrap();
    let under = |id: &str| {
        counts
            .iter()
            .find(|c| c.kind == SealedKind::TenantSecret && c.key_id == id)
            .map_or(0, |c| c.count)
    };
    assert_eq!((under(&new_id), under(old.current().id())), (3, 2));
}
