//! Dashboard sessions (migration 0019): made from an API token or the environment admin
//! token, found by the cookie secret only while live and while the token is not revoked,
//! switched between tenants only by admins; and when tokens were last used.

use std::time::Duration;

use sluice_store::{StoreError, UiIdentity, token_hash};
use sqlx::PgPool;

use crate::common::*;

const HOUR: Duration = Duration::from_secs(3600);

/// A token of `tenant` and the identity it authenticates as.
async fn identity(store: &sluice_store::Store, tenant: &str, admin: bool) -> (String, UiIdentity) {
    let token = store.create_token(tenant, admin, None).await.unwrap().token;
    let who = store.authenticate(&token).await.unwrap().unwrap();
    (
        token,
        UiIdentity {
            token_id: Some(who.token_id),
            env_admin_hash: None,
            tenant: who.tenant,
            admin: who.admin,
            read_only: who.read_only,
        },
    )
}

async fn session_rows(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM sluice.ui_sessions")
        .fetch_one(pool)
        .await
        .unwrap()
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_session_is_found_by_its_secret_and_only_its_hash_is_stored(pool: PgPool) {
    let store = setup(&pool).await;
    let (_, who) = identity(&store, TENANT, false).await;
    let (secret, session) = store.create_ui_session(&who, HOUR).await.unwrap();
    assert_eq!(secret.len(), 64);
    assert_eq!(session.csrf_token.len(), 64);
    assert_ne!(secret, session.csrf_token);
    assert_eq!(
        (session.home_tenant.as_str(), session.acting_tenant.as_str()),
        (TENANT, TENANT)
    );
    assert_eq!(session.token_id, who.token_id);
    assert!(!session.admin && !session.read_only);
    let now = db_now(&pool).await;
    assert!(session.expires_at > now + chrono::Duration::minutes(59));
    assert!(session.expires_at <= now + chrono::Duration::minutes(61));
    assert!(!format!("{session:?}").contains(&session.csrf_token));

    assert_eq!(
        store.ui_session(&secret).await.unwrap(),
        Some(session.clone())
    );
    assert_eq!(store.ui_session("not-the-secret").await.unwrap(), None);

    let stored: (Vec<u8>, String) =
        sqlx::query_as("SELECT secret_hash, csrf_token FROM sluice.ui_sessions WHERE id = $1")
            .bind(session.id)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(stored.0, token_hash(&secret).to_vec());

    // A second sign-in is a second session with other secrets.
    let (secret2, session2) = store.create_ui_session(&who, HOUR).await.unwrap();
    assert_ne!(secret2, secret);
    assert_ne!(session2.csrf_token, session.csrf_token);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn an_expired_session_is_gone_and_swept_by_the_next_sign_in(pool: PgPool) {
    let store = setup(&pool).await;
    let (_, who) = identity(&store, TENANT, false).await;
    let (secret, session) = store.create_ui_session(&who, HOUR).await.unwrap();
    sqlx::query(
        "UPDATE sluice.ui_sessions SET expires_at = now() - interval '1 second' WHERE id = $1",
    )
    .bind(session.id)
    .execute(&pool)
    .await
    .unwrap();
    assert_eq!(store.ui_session(&secret).await.unwrap(), None);
    assert_eq!(session_rows(&pool).await, 1);
    let (fresh, _) = store.create_ui_session(&who, HOUR).await.unwrap();
    assert_eq!(session_rows(&pool).await, 1, "the expired row was swept");
    assert!(store.ui_session(&fresh).await.unwrap().is_some());
    assert!(matches!(
        store.create_ui_session(&who, Duration::ZERO).await,
        Err(StoreError::InvalidInput { field: "ttl", .. })
    ));
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn revoking_the_token_ends_its_sessions_at_once(pool: PgPool) {
    let store = setup(&pool).await;
    let (_, who) = identity(&store, TENANT, false).await;
    let (secret, _) = store.create_ui_session(&who, HOUR).await.unwrap();
    let env_admin = UiIdentity {
        token_id: None,
        env_admin_hash: Some(token_hash("sluice_env_admin")),
        tenant: TENANT.into(),
        admin: true,
        read_only: false,
    };
    let (env_secret, env_session) = store.create_ui_session(&env_admin, HOUR).await.unwrap();
    assert_eq!(
        env_session.env_admin_hash.as_deref(),
        Some(&token_hash("sluice_env_admin")[..])
    );

    store
        .revoke_token(TENANT, who.token_id.unwrap())
        .await
        .unwrap();
    assert_eq!(store.ui_session(&secret).await.unwrap(), None);
    assert!(store.ui_session(&env_secret).await.unwrap().is_some());
    // And no new session can be made from it.
    match store.create_ui_session(&who, HOUR).await {
        Err(StoreError::NotFound {
            entity: "token", ..
        }) => {}
        other => panic!("expected the revoked token refused, got {other:?}"),
    }
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_session_must_be_the_identity_its_token_is(pool: PgPool) {
    let store = setup(&pool).await;
    let (_, who) = identity(&store, TENANT, false).await;
    let claims_admin = UiIdentity {
        admin: true,
        ..who.clone()
    };
    assert!(matches!(
        store.create_ui_session(&claims_admin, HOUR).await,
        Err(StoreError::NotFound {
            entity: "token",
            ..
        })
    ));
    let other_tenant = UiIdentity {
        tenant: OTHER_TENANT.into(),
        ..who.clone()
    };
    assert!(matches!(
        store.create_ui_session(&other_tenant, HOUR).await,
        Err(StoreError::NotFound {
            entity: "token",
            ..
        })
    ));
    let unknown_tenant = UiIdentity {
        token_id: None,
        env_admin_hash: Some([7; 32]),
        tenant: "nope".into(),
        ..who.clone()
    };
    match store.create_ui_session(&unknown_tenant, HOUR).await {
        Err(StoreError::UnknownTenant(t)) => assert_eq!(t, "nope"),
        other => panic!("expected UnknownTenant, got {other:?}"),
    }
    let both = UiIdentity {
        env_admin_hash: Some([7; 32]),
        ..who.clone()
    };
    assert!(matches!(
        store.create_ui_session(&both, HOUR).await,
        Err(StoreError::InvalidInput { .. })
    ));
    let neither = UiIdentity {
        token_id: None,
        ..who.clone()
    };
    assert!(matches!(
        store.create_ui_session(&neither, HOUR).await,
        Err(StoreError::InvalidInput { .. })
    ));
    assert_eq!(session_rows(&pool).await, 0);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn only_an_admin_session_switches_tenant(pool: PgPool) {
    let store = setup(&pool).await;
    let (_, admin) = identity(&store, TENANT, true).await;
    let (secret, session) = store.create_ui_session(&admin, HOUR).await.unwrap();
    store
        .set_ui_session_tenant(session.id, OTHER_TENANT)
        .await
        .unwrap();
    let now = store.ui_session(&secret).await.unwrap().unwrap();
    assert_eq!(
        (now.home_tenant.as_str(), now.acting_tenant.as_str()),
        (TENANT, OTHER_TENANT)
    );
    match store.set_ui_session_tenant(session.id, "nope").await {
        Err(StoreError::UnknownTenant(t)) => assert_eq!(t, "nope"),
        other => panic!("expected UnknownTenant, got {other:?}"),
    }
    let still = store.ui_session(&secret).await.unwrap().unwrap();
    assert_eq!(still.acting_tenant, OTHER_TENANT);

    let (_, tenant) = identity(&store, TENANT, false).await;
    let (tsecret, tsession) = store.create_ui_session(&tenant, HOUR).await.unwrap();
    assert!(matches!(
        store.set_ui_session_tenant(tsession.id, OTHER_TENANT).await,
        Err(StoreError::InvalidInput {
            field: "tenant",
            ..
        })
    ));
    let unchanged = store.ui_session(&tsecret).await.unwrap().unwrap();
    assert_eq!(unchanged.acting_tenant, TENANT);
    assert!(matches!(
        store.set_ui_session_tenant(-1, OTHER_TENANT).await,
        Err(StoreError::NotFound { .. })
    ));
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn signing_out_deletes_the_session(pool: PgPool) {
    let store = setup(&pool).await;
    let (_, who) = identity(&store, TENANT, false).await;
    let (secret, _) = store.create_ui_session(&who, HOUR).await.unwrap();
    let (other, _) = store.create_ui_session(&who, HOUR).await.unwrap();
    store.delete_ui_session(&secret).await.unwrap();
    assert_eq!(store.ui_session(&secret).await.unwrap(), None);
    assert!(store.ui_session(&other).await.unwrap().is_some());
    store.delete_ui_session(&secret).await.unwrap(); // unknown: nothing to do
    assert_eq!(session_rows(&pool).await, 1);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn authenticating_records_use_at_most_once_a_minute(pool: PgPool) {
    let store = setup(&pool).await;
    let (token, who) = identity(&store, TENANT, false).await;
    let id = who.token_id.unwrap();
    let last_used = |store: sluice_store::Store| async move {
        store
            .list_tokens(TENANT)
            .await
            .unwrap()
            .into_iter()
            .find(|t| t.id == id)
            .unwrap()
            .last_used_at
    };
    let first = last_used(store.clone()).await.expect("set by authenticate");
    // A fresh token that never authenticated has none.
    let unused = store.create_token(TENANT, false, None).await.unwrap();
    assert_eq!(unused.record.last_used_at, None);

    assert!(store.authenticate(&token).await.unwrap().is_some());
    assert_eq!(last_used(store.clone()).await, Some(first), "not rewritten");

    sqlx::query(
        "UPDATE sluice.api_tokens SET last_used_at = now() - interval '2 minutes' WHERE id = $1",
    )
    .bind(id)
    .execute(&pool)
    .await
    .unwrap();
    let old = last_used(store.clone()).await.unwrap();
    assert!(store.authenticate(&token).await.unwrap().is_some());
    let renewed = last_used(store.clone()).await.unwrap();
    assert!(
        renewed > old + chrono::Duration::seconds(100),
        "{old} → {renewed}"
    );

    store.revoke_token(TENANT, id).await.unwrap();
    sqlx::query("UPDATE sluice.api_tokens SET last_used_at = NULL WHERE id = $1")
        .bind(id)
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(store.authenticate(&token).await.unwrap(), None);
    assert_eq!(
        last_used(store.clone()).await,
        None,
        "a revoked token is not touched"
    );
}
