//! Migrations: applying them again is a no-op.

use sluice_store::{MIGRATOR, Store, StoreError};
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
            "attempt_history",
            "attempt_logs",
            "components",
            "flow_keys",
            "follow_up_aliases",
            "job_types",
            "jobs",
            "journal",
            "journal_heads",
            "maintenance_runs",
            "schedule_slots",
            "schedules",
            "secrets",
            "signals",
            "tenants",
            "ui_sessions",
            "usage_hourly",
            "webhook_endpoints",
            "webhook_events",
            "workers",
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
            // No index of every pending row (migration 0038): each lane has its own.
            "jobs_claim_tenant_idx",
            "jobs_finished_idx",
            // Partial: only jobs in the flow lane have an entry (migration 0024).
            "jobs_flow_idx",
            "jobs_idempotency_key_uidx",
            // Partial: only follow-up jobs have an entry (migration 0014).
            "jobs_parent_uidx",
            "jobs_pkey",
            "jobs_running_idx",
            // Partial: only waiting jobs have an entry (migration 0027).
            "jobs_waiting_idx",
        ]
    );
}

/// Runs the SQL of the migrations whose version passes `which`, in order, without
/// recording them (the tests below migrate in two steps around migration 9).
async fn apply_migrations(pool: &PgPool, which: impl Fn(i64) -> bool) {
    for m in MIGRATOR.iter().filter(|m| which(m.version)) {
        sqlx::raw_sql(m.sql.clone()).execute(pool).await.unwrap();
    }
}

/// Migration 9 moves the attempt of a running job from the history table onto its row,
/// keeps finished attempts where they were, and the history reads the same through the
/// `sluice.job_attempts` view before and after; the moved attempt then finishes normally.
#[sqlx::test(migrations = false)]
async fn migration_9_moves_running_attempts_onto_their_rows(pool: PgPool) {
    assert!(
        MIGRATOR.iter().any(|m| m.version == 9),
        "migration 9 exists"
    );
    apply_migrations(&pool, |v| v < 9).await;
    sqlx::raw_sql(
        "INSERT INTO sluice.tenants (id) VALUES ('acme');
         INSERT INTO sluice.jobs (tenant, job_type, payload, max_attempts)
         SELECT 'acme', 'echo', '\\x7b7d', 3 FROM generate_series(1, 3);",
    )
    .execute(&pool)
    .await
    .unwrap();
    // Part 8's claim: three attempts open in the history table; the first completes and
    // the second is retried (old statements, written out here), the third keeps running.
    let claimed: Vec<(i64, uuid::Uuid)> = sqlx::query_as(
        "SELECT id, lease_token FROM sluice.claim('old-host', 3, 60000000, NULL, NULL) ORDER BY id",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(claimed.len(), 3);
    // Ids of rows this test just created, not input.
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "UPDATE sluice.jobs SET state = 'completed', finished_at = now(), locked_by = NULL,
             locked_until = NULL, lease_token = NULL WHERE id = {done};
         UPDATE sluice.job_attempts SET finished_at = now(), outcome = 'completed', fuel_used = 7
             WHERE job_id = {done};
         UPDATE sluice.jobs SET state = 'pending', last_error = 'boom', locked_by = NULL,
             locked_until = NULL, lease_token = NULL WHERE id = {retried};
         UPDATE sluice.job_attempts SET finished_at = now(), outcome = 'retry', error = 'boom'
             WHERE job_id = {retried};",
        done = claimed[0].0,
        retried = claimed[1].0,
    )))
    .execute(&pool)
    .await
    .unwrap();
    let history = || async {
        sqlx::query_as::<_, (i64, i64, i32, String, Option<String>, Option<i64>, bool)>(
            "SELECT id, job_id, attempt, worker, outcome, fuel_used, finished_at IS NULL \
             FROM sluice.job_attempts ORDER BY id",
        )
        .fetch_all(&pool)
        .await
        .unwrap()
    };
    let before = history().await;
    assert_eq!(before.len(), 3);

    apply_migrations(&pool, |v| v >= 9).await;
    assert_eq!(history().await, before, "the view shows the same history");
    let (running, on_row): (i64, Option<i64>) =
        sqlx::query_as("SELECT id, attempt_id FROM sluice.jobs WHERE state = 'running'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(running, claimed[2].0);
    assert_eq!(
        on_row,
        Some(before[2].0),
        "the open attempt moved onto its row"
    );
    let open_rows: i64 =
        sqlx::query_scalar("SELECT count(*) FROM sluice.attempt_history WHERE finished_at IS NULL")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(open_rows, 0);

    // The converted attempt finishes through today's statement.
    let store = Store::new(pool.clone());
    let lease = sluice_store::Lease {
        job_id: running,
        token: claimed[2].1,
    };
    store
        .fail(&lease, &sluice_store::Failure::retry("late"))
        .await
        .unwrap();
    let attempts = store.attempts(None, running).await.unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].id, before[2].0);
    assert_eq!(attempts[0].worker, "old-host");
    assert_eq!(attempts[0].error.as_deref(), Some("late"));
    assert!(attempts[0].finished_at.is_some());
}

/// The worker, scheduler and server check the schema at start: current passes, a
/// database that is behind or ahead of the binary, or has no schema, is named as such.
#[sqlx::test(migrations = false)]
async fn check_schema_names_a_missing_an_old_and_a_newer_schema(pool: PgPool) {
    let store = Store::new(pool.clone());
    let latest = MIGRATOR.iter().map(|m| m.version).max().unwrap();
    let mismatch = |result: Result<(), StoreError>| match result {
        Err(error @ StoreError::SchemaMismatch { .. }) => error.to_string(),
        other => panic!("expected a schema mismatch, got {other:?}"),
    };

    let none = mismatch(store.check_schema().await);
    assert!(
        none.contains("no Sluice schema") && none.contains("sluice migrate"),
        "{none}"
    );

    store.migrate().await.unwrap();
    store.check_schema().await.unwrap();

    sqlx::query("DELETE FROM _sqlx_migrations WHERE version = $1")
        .bind(latest)
        .execute(&pool)
        .await
        .unwrap();
    let behind = mismatch(store.check_schema().await);
    assert!(
        behind.contains(&format!("at migration {}", latest - 1))
            && behind.contains(&format!("needs {latest}"))
            && behind.contains("sluice migrate"),
        "{behind}"
    );

    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES ($1, 'from the future', true, '\\x00', 0)",
    )
    .bind(latest + 1)
    .execute(&pool)
    .await
    .unwrap();
    let ahead = mismatch(store.check_schema().await);
    assert!(ahead.contains("newer than this sluice"), "{ahead}");
}

/// Migration 9's fallback: a running job whose open history row is missing (no binary
/// leaves one so, but a hand-edited database might) still gets an attempt on its row, so
/// the new check constraint holds and the migration goes through.
#[sqlx::test(migrations = false)]
async fn migration_9_gives_a_running_job_without_history_an_attempt(pool: PgPool) {
    apply_migrations(&pool, |v| v < 9).await;
    sqlx::raw_sql(
        "INSERT INTO sluice.tenants (id) VALUES ('acme');
         INSERT INTO sluice.jobs (tenant, job_type, payload, max_attempts)
         VALUES ('acme', 'echo', '\\x7b7d', 3);
         SELECT count(*) FROM sluice.claim('old-host', 1, 60000000, NULL, NULL);
         DELETE FROM sluice.job_attempts;",
    )
    .execute(&pool)
    .await
    .unwrap();
    apply_migrations(&pool, |v| v >= 9).await;

    let attempts: Vec<(i32, String, bool)> =
        sqlx::query_as("SELECT attempt, worker, finished_at IS NULL FROM sluice.job_attempts")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(attempts, [(1, "old-host".to_string(), true)]);
}
