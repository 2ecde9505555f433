//! Migrations: applying them again is a no-op.

use sluice_store::{MIGRATOR, Store};
use sqlx::PgPool;

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn migrating_twice_is_a_no_op(pool: PgPool) {
    let applied = || async {
        sqlx::query_as::<_, (i64, Vec<u8>)>(
            "SELECT version, checksum FROM _sqlx_migrations ORDER BY version",
        )
        .fetch_all(&pool)
        .await
        .unwrap()
    };
    let before = applied().await;
    assert_eq!(before.len(), MIGRATOR.iter().count());
    let store = Store::new(pool.clone());
    store.migrate().await.unwrap();
    store.migrate().await.unwrap();
    assert_eq!(applied().await, before);
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT tablename::text FROM pg_tables WHERE schemaname = 'sluice' ORDER BY 1",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(
        tables,
        [
            "api_tokens",
            "components",
            "job_attempts",
            "job_types",
            "jobs",
            "maintenance_runs",
            "schedule_slots",
            "schedules",
            "tenants",
        ]
    );

    // The hot table carries exactly these indexes: each one costs every insert and
    // state change, so adding one is a decision (see migrations/0002_jobs.sql).
    let indexes: Vec<String> = sqlx::query_scalar(
        "SELECT indexname::text FROM pg_indexes \
         WHERE schemaname = 'sluice' AND tablename = 'jobs' ORDER BY indexname",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(
        indexes,
        [
            "jobs_claim_idx",
            "jobs_claim_tenant_idx",
            "jobs_finished_idx",
            "jobs_idempotency_key_uidx",
            "jobs_pkey",
            "jobs_running_idx",
        ]
    );
}
