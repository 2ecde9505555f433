//! Connecting (`Store::connect_with`, `Store::listen_at`): every connection says the
//! process's `application_name` unless the URL sets one; a server that refuses writes is
//! an outage (transient), and `target_session_attrs=read-write` refuses it outright; of
//! several hosts, the first that answers is used.

use sluice_store::{ConnectError, Store};
use sqlx::PgPool;

/// `DATABASE_URL` pointed at the test's own database, with `params` added.
fn url_of(pool: &PgPool, params: &str) -> String {
    let base = std::env::var("DATABASE_URL").expect("DATABASE_URL is set");
    let base = base.split('?').next().unwrap();
    let db = pool.connect_options().get_database().unwrap().to_owned();
    let (prefix, _) = base.rsplit_once('/').unwrap();
    format!("{prefix}/{db}{params}")
}

async fn names(pool: &PgPool) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT application_name FROM pg_stat_activity WHERE datname = current_database() \
         AND pid <> pg_backend_pid() ORDER BY 1",
    )
    .fetch_all(pool)
    .await
    .unwrap()
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn every_connection_carries_the_application_name_unless_the_url_sets_one(pool: PgPool) {
    let url = url_of(&pool, "");
    let store = Store::connect_with(&url, "sluice worker w-test", 2)
        .await
        .unwrap();
    store.ping().await.unwrap();
    let _listener = store.listen_at(&url).await.unwrap();
    let mine = Store::connect_with(&url_of(&pool, "?application_name=mine"), "unused", 1)
        .await
        .unwrap();
    mine.ping().await.unwrap();
    let seen = names(&pool).await;
    let worker = seen.iter().filter(|n| *n == "sluice worker w-test").count();
    assert!(worker >= 2, "the pool and the listener: {seen:?}");
    assert!(seen.iter().any(|n| n == "mine"), "{seen:?}");
    assert!(!seen.iter().any(|n| n == "unused"), "{seen:?}");
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_read_only_server_is_an_outage_and_read_write_urls_refuse_it(pool: PgPool) {
    let db = pool.connect_options().get_database().unwrap().to_owned();
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "ALTER DATABASE \"{db}\" SET default_transaction_read_only = on"
    )))
    .execute(&pool)
    .await
    .unwrap();
    let store = Store::connect(&url_of(&pool, "")).await.unwrap();
    let error = store.create_tenant("late").await.unwrap_err();
    assert!(
        error.is_transient(),
        "a write on a read-only server (SQLSTATE 25006) is retried: {error}"
    );
    let refused = Store::connect(&url_of(&pool, "?target_session_attrs=read-write"))
        .await
        .unwrap_err();
    assert!(
        matches!(refused, ConnectError::Unreachable(_)),
        "{refused:?}"
    );
    let message = refused.to_string();
    assert!(
        message.contains("read-only") && message.contains("target_session_attrs=read-write"),
        "{message}"
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn of_several_hosts_the_first_that_answers_is_used(pool: PgPool) {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_port = closed.local_addr().unwrap().port();
    drop(closed);
    let url = url_of(&pool, "");
    let (scheme_user, rest) = url.rsplit_once('@').unwrap();
    let (host, db) = rest.split_once('/').unwrap();
    let several = format!("{scheme_user}@127.0.0.1:{closed_port},{host}/{db}");
    let store = Store::connect(&several)
        .await
        .expect("the second host answers");
    store.create_tenant("reached").await.unwrap();

    let none = format!("{scheme_user}@127.0.0.1:{closed_port},127.0.0.1:{closed_port}/{db}");
    let refused = Store::connect(&none).await.unwrap_err();
    assert!(
        matches!(refused, ConnectError::Unreachable(_)),
        "{refused:?}"
    );
    let message = refused.to_string();
    assert!(
        message.contains(&format!("127.0.0.1:{closed_port}: ")),
        "each host and its reason: {message}"
    );
    let bad = Store::connect("mysql://h/db").await.unwrap_err();
    assert!(matches!(bad, ConnectError::BadUrl(_)), "{bad:?}");
}

/// Behind a transaction pooler retention's session lock must not go through the pool:
/// with a direct URL (`Store::with_direct_url`) the lock's connection goes there.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn retention_takes_its_lock_on_the_direct_url(pool: PgPool) {
    use sluice_store::{MaintenanceRun, RetentionPolicy};
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_port = closed.local_addr().unwrap().port();
    drop(closed);
    let store = Store::new(pool.clone());
    let policy = RetentionPolicy::default();
    let nowhere = store
        .clone()
        .with_direct_url(&format!("postgres://postgres@127.0.0.1:{closed_port}/x"));
    let error = nowhere
        .prune_if_due(&policy, std::time::Duration::ZERO, "h")
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains(&closed_port.to_string()),
        "{error}"
    );
    let direct = store.with_direct_url(&url_of(&pool, ""));
    let run = direct
        .prune_if_due(&policy, std::time::Duration::ZERO, "h")
        .await
        .unwrap();
    assert!(matches!(run, MaintenanceRun::Ran(_)), "{run:?}");
}
