//! Everything sealed under the operator's keys, every kind together: the schema's key id
//! columns are exactly the kinds rotate-key walks; endpoints' signing secrets (current
//! and previous) are walked, re-sealed with a guard and counted like tenant secrets; and
//! the claim leaves a tenant's webhook deliveries pending on a host that cannot open one
//! of its endpoints' signing secrets (migration 0022).

use std::collections::BTreeSet;
use std::time::Duration;

use sluice_secrets::{Keyring, Sealed, SecretKey};
use sluice_store::{
    NewEndpoint, ResealedRow, SealedKind, SealedRowKey, SealedValue, Store, WEBHOOK_JOB_TYPE,
    endpoint_secret_name,
};
use sqlx::PgPool;

use crate::common::*;

fn keyring() -> Keyring {
    Keyring::new(SecretKey::generate().unwrap(), Vec::new())
}

fn sealed_value(ring: &Keyring, tenant: &str, id: i64, secret: &str) -> SealedValue {
    let s = ring
        .seal(tenant, &endpoint_secret_name(id), secret)
        .unwrap();
    SealedValue {
        key_id: s.key_id,
        nonce: s.nonce,
        ciphertext: s.ciphertext,
    }
}

/// An endpoint of `tenant` whose signing secret is `secret`, sealed under `ring`.
async fn endpoint(store: &Store, ring: &Keyring, tenant: &str, secret: &str) -> i64 {
    let id = store.next_webhook_endpoint_id().await.unwrap();
    let spec = NewEndpoint {
        tenant: tenant.into(),
        url: "https://hooks.example.com/x".into(),
        events: vec!["*".into()],
        ..NewEndpoint::default()
    };
    let sealed = sealed_value(ring, tenant, id, secret);
    store
        .create_webhook_endpoint(id, &spec, &sealed)
        .await
        .unwrap()
        .id
}

/// Claims with the key ids of `rings`: the ids and types of what was claimed.
async fn claim_with(store: &Store, rings: &[&Keyring]) -> Vec<(i64, String)> {
    let mut req = claim_req("w", 10);
    req.secret_keys = rings.iter().flat_map(|r| r.ids()).collect();
    let claimed = store.claim(&req).await.unwrap();
    claimed.into_iter().map(|j| (j.id, j.job_type)).collect()
}

async fn send(pool: &PgPool, tenant: &str) -> i64 {
    sqlx::query("SELECT sluice.send_event($1, 'invoice.paid', '{}'::jsonb)")
        .bind(tenant)
        .execute(pool)
        .await
        .unwrap();
    sqlx::query_scalar(
        "SELECT max(id) FROM sluice.jobs WHERE tenant = $1 AND job_type = 'sluice.webhook'",
    )
    .bind(tenant)
    .fetch_one(pool)
    .await
    .unwrap()
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn every_key_id_column_of_the_schema_is_a_kind_rotate_key_walks(pool: PgPool) {
    // A new column holding something sealed under the operator's keys names its key id
    // (`key_id`, `previous_key_id`, ...): it must be a SealedKind, or rotate-key would
    // leave it under the old key and every host given only the new key would fail it.
    let columns: Vec<(String, String)> = sqlx::query_as(
        "SELECT c.table_name::text, c.column_name::text \
         FROM information_schema.columns c \
         JOIN information_schema.tables t \
           ON t.table_schema = c.table_schema AND t.table_name = c.table_name \
         WHERE c.table_schema = 'sluice' AND t.table_type = 'BASE TABLE' \
           AND c.column_name LIKE '%key\\_id'",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let in_schema: BTreeSet<(String, String)> = columns.into_iter().collect();
    let walked: BTreeSet<(String, String)> = SealedKind::ALL
        .iter()
        .map(|k| {
            let (table, column) = k.key_id_column();
            (table.to_owned(), column.to_owned())
        })
        .collect();
    assert_eq!(
        in_schema, walked,
        "the schema's key id columns and the kinds rotate-key walks (SealedKind::ALL) differ"
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn deliveries_stay_pending_on_a_host_that_cannot_open_their_signing_secret(pool: PgPool) {
    let store = setup(&pool).await;
    let (a, b) = (keyring(), keyring());
    let ep = endpoint(&store, &a, TENANT, "whsec_a").await;
    let delivery = send(&pool, TENANT).await;
    let plain = store.enqueue(&job("plain")).await.unwrap().id;
    // Only key B: the plain job, not the delivery (no attempt spent).
    assert_eq!(claim_with(&store, &[&b]).await, [(plain, JOB.to_owned())]);
    let row = store.get(None, delivery).await.unwrap().unwrap();
    assert_eq!((row.state.to_string(), row.attempt), ("pending".into(), 0));
    // Key A (beside B): claimed.
    assert_eq!(
        claim_with(&store, &[&b, &a]).await,
        [(delivery, WEBHOOK_JOB_TYPE.to_owned())]
    );

    // Rotated to a secret under B, the previous one (under A) still signing: a host
    // with only B cannot sign with both, so it leaves the delivery.
    store
        .rotate_webhook_secret(
            TENANT,
            ep,
            &sealed_value(&b, TENANT, ep, "whsec_b"),
            Duration::from_secs(3600),
        )
        .await
        .unwrap();
    let second = send(&pool, TENANT).await;
    assert!(claim_with(&store, &[&b]).await.is_empty());
    // Once the previous secret's grace is over it no longer signs: B is enough.
    sqlx::query("UPDATE sluice.webhook_endpoints SET previous_until = now() - interval '1 s'")
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(
        claim_with(&store, &[&b]).await,
        [(second, WEBHOOK_JOB_TYPE.to_owned())]
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn signing_secrets_are_walked_resealed_with_a_guard_and_counted_per_kind(pool: PgPool) {
    let store = setup(&pool).await;
    let old = keyring();
    let new = Keyring::new(SecretKey::generate().unwrap(), vec![old.current().clone()]);
    let new_id = new.current().id().to_owned();
    let eps = [
        endpoint(&store, &old, TENANT, "whsec_0").await,
        endpoint(&store, &old, TENANT, "whsec_1").await,
        endpoint(&store, &old, TENANT, "whsec_2").await,
    ];
    // ep 0 keeps a previous secret under the old key, its current one under the new.
    store
        .rotate_webhook_secret(
            TENANT,
            eps[0],
            &sealed_value(&new, TENANT, eps[0], "whsec_0b"),
            Duration::from_secs(60),
        )
        .await
        .unwrap();
    let counts = store.sealed_key_counts().await.unwrap();
    let under = |kind: SealedKind, id: &str| {
        counts
            .iter()
            .find(|c| c.kind == kind && c.key_id == id)
            .map_or(0, |c| c.count)
    };
    assert_eq!(under(SealedKind::WebhookSecret, old.current().id()), 2);
    assert_eq!(under(SealedKind::WebhookSecret, &new_id), 1);
    assert_eq!(
        under(SealedKind::WebhookPreviousSecret, old.current().id()),
        1
    );

    // Current secrets: in id order, in batches after a cursor.
    let first = store
        .sealed_not_under_key(SealedKind::WebhookSecret, &new_id, None, 1)
        .await
        .unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].key, SealedRowKey::Endpoint(eps[1]));
    let rest = store
        .sealed_not_under_key(SealedKind::WebhookSecret, &new_id, first.last(), 10)
        .await
        .unwrap();
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].key, SealedRowKey::Endpoint(eps[2]));
    let previous = store
        .sealed_not_under_key(SealedKind::WebhookPreviousSecret, &new_id, None, 10)
        .await
        .unwrap();
    assert_eq!(previous.len(), 1);
    assert_eq!(previous[0].key, SealedRowKey::Endpoint(eps[0]));

    let reseal = |rows: &[sluice_store::SealedRow]| -> Vec<ResealedRow> {
        rows.iter()
            .map(|row| {
                let sealed = Sealed {
                    key_id: row.sealed.key_id.clone(),
                    nonce: row.sealed.nonce.clone(),
                    ciphertext: row.sealed.ciphertext.clone(),
                };
                let value = new.open(&row.tenant, &row.sealed_name(), &sealed).unwrap();
                let again = new.seal(&row.tenant, &row.sealed_name(), &value).unwrap();
                ResealedRow {
                    old: row.clone(),
                    nonce: again.nonce,
                    ciphertext: again.ciphertext,
                }
            })
            .collect()
    };
    let mut all = first.clone();
    all.extend(rest);
    let batch = reseal(&all);
    // ep 2's secret is rotated between the read and the write: it is not overwritten.
    store
        .rotate_webhook_secret(
            TENANT,
            eps[2],
            &sealed_value(&new, TENANT, eps[2], "whsec_2b"),
            Duration::ZERO,
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .reseal(SealedKind::WebhookSecret, &new_id, &batch)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .reseal(
                SealedKind::WebhookPreviousSecret,
                &new_id,
                &reseal(&previous)
            )
            .await
            .unwrap(),
        1
    );
    // A batch of one kind refuses rows of another.
    assert!(
        store
            .reseal(SealedKind::WebhookPreviousSecret, &new_id, &batch)
            .await
            .is_err()
    );
    // What is left under the old key: ep 2's previous secret (rotated out above).
    let counts = store.sealed_key_counts().await.unwrap();
    let left: Vec<_> = counts
        .iter()
        .filter(|c| c.key_id != new_id)
        .map(|c| (c.kind, c.count))
        .collect();
    assert_eq!(left, [(SealedKind::WebhookPreviousSecret, 1)]);
    // The re-sealed current secrets open under the new key as the same values.
    let target = store.webhook_target(TENANT, eps[1], 0).await.unwrap();
    let ep1 = target.endpoint.unwrap();
    assert_eq!(ep1.secrets[0].key_id, new_id);
    let sealed = Sealed {
        key_id: ep1.secrets[0].key_id.clone(),
        nonce: ep1.secrets[0].nonce.clone(),
        ciphertext: ep1.secrets[0].ciphertext.clone(),
    };
    assert_eq!(
        new.open(TENANT, &endpoint_secret_name(eps[1]), &sealed)
            .unwrap(),
        "whsec_1"
    );
}
