//! Instants: `run_at` is held to 1970..=9999 and delays to 100 years, by the Rust
//! enqueue path, `sluice.enqueue` and the table; migration 10 clamped older rows into
//! the range, and readers clamp a row that got around it.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use sluice_store::{JobFilter, MAX_DELAY, NewJob, RUN_AT_MAX, RUN_AT_MIN, RunAt};
use sqlx::PgPool;

use super::{invalid_field, refusal};
use crate::common::*;

/// The Rust enqueue path holds `run_at` to 1970..=9999 and delays to 100 years.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn enqueue_refuses_instants_outside_the_range_and_overlong_delays(pool: PgPool) {
    let store = setup(&pool).await;
    let us = TimeDelta::microseconds(1);
    for at in [
        RUN_AT_MIN - us,
        RUN_AT_MAX + us,
        DateTime::<Utc>::MIN_UTC,
        DateTime::<Utc>::MAX_UTC,
    ] {
        let result = store.enqueue(&job("{}").with_run_at(RunAt::At(at))).await;
        assert_eq!(invalid_field(result), "run_at", "{at}");
    }
    for delay in [MAX_DELAY + Duration::from_secs(1), Duration::MAX] {
        let result = store
            .enqueue(&job("{}").with_run_at(RunAt::Delay(delay)))
            .await;
        assert_eq!(invalid_field(result), "delay", "{delay:?}");
    }
    assert_eq!(count_jobs(&pool).await, 0, "nothing written");
    for run_at in [
        RunAt::At(RUN_AT_MIN),
        RunAt::At(RUN_AT_MAX),
        RunAt::Delay(MAX_DELAY),
    ] {
        store.enqueue(&job("{}").with_run_at(run_at)).await.unwrap();
    }
    let jobs = store.list(&JobFilter::default()).await.unwrap();
    assert_eq!(jobs.len(), 3);
}

/// `sluice.enqueue(...)` refuses non-finite and out-of-range instants (22023, COLUMN
/// run_at), takes the bounds themselves, and the table refuses them too.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn sql_enqueue_and_the_table_refuse_run_at_outside_the_range(pool: PgPool) {
    setup(&pool).await;
    for at in [
        "infinity",
        "-infinity",
        "270000-01-01 00:00:00+00",
        "4713-06-01 00:00:00+00 BC",
        "1969-12-31 23:59:59.999999+00",
        "10000-01-01 00:00:00+00",
    ] {
        let call = format!(
            "SELECT sluice.enqueue(tenant => 'acme', job_type => 'send-email', \
             payload => '{{}}', run_at => '{at}')"
        );
        let (code, column, message) = refusal(&pool, &call).await;
        assert_eq!(
            (code.as_str(), column.as_str()),
            ("22023", "run_at"),
            "{at}: {message}"
        );
        assert!(message.starts_with("invalid run_at: "), "{message}");
        let insert = format!(
            "INSERT INTO sluice.jobs (tenant, job_type, payload, max_attempts, run_at) \
             VALUES ('acme', 'send-email', '', 1, '{at}')"
        );
        let (code, _, message) = refusal(&pool, &insert).await;
        assert_eq!(code, "23514", "{at}: {message}");
        assert!(message.contains("jobs_run_at_range"), "{message}");
    }
    assert_eq!(count_jobs(&pool).await, 0, "nothing written");
    for at in ["1970-01-01 00:00:00+00", "9999-12-31 23:59:59.999999+00"] {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT sluice.enqueue(tenant => 'acme', job_type => 'send-email', \
             payload => '{{}}', run_at => '{at}')"
        )))
        .execute(&pool)
        .await
        .unwrap();
    }
    assert_eq!(count_jobs(&pool).await, 2);
}

/// Migration 10 clamps rows written before it into the range (instead of failing or
/// leaving them unreadable) and then enforces the range.
#[sqlx::test(migrations = false)]
async fn migration_10_clamps_existing_rows_into_the_range(pool: PgPool) {
    use sluice_store::MIGRATOR;
    for m in MIGRATOR.iter().filter(|m| m.version < 10) {
        sqlx::raw_sql(m.sql.clone()).execute(&pool).await.unwrap();
    }
    sqlx::raw_sql(
        "INSERT INTO sluice.tenants (id) VALUES ('acme');
         INSERT INTO sluice.jobs (tenant, job_type, payload, max_attempts, run_at) VALUES
           ('acme', 'echo', '', 1, 'infinity'),
           ('acme', 'echo', '', 1, '-infinity'),
           ('acme', 'echo', '', 1, '270000-01-01 00:00:00+00'),
           ('acme', 'echo', '', 1, '2030-06-01 12:00:00+00');",
    )
    .execute(&pool)
    .await
    .unwrap();
    for m in MIGRATOR.iter().filter(|m| m.version == 10) {
        sqlx::raw_sql(m.sql.clone()).execute(&pool).await.unwrap();
    }
    let run_at: Vec<String> = sqlx::query_scalar(
        "SELECT to_char(run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') \
         FROM sluice.jobs ORDER BY id",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(
        run_at,
        [
            "9999-12-31 23:59:59.999999",
            "1970-01-01 00:00:00.000000",
            "9999-12-31 23:59:59.999999",
            "2030-06-01 12:00:00.000000",
        ]
    );
    let valid: bool = sqlx::query_scalar(
        "SELECT convalidated FROM pg_constraint WHERE conname = 'jobs_run_at_range'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert!(valid, "the constraint is validated");
}

/// Readers clamp `run_at` into the range, so even a row that got around the constraint
/// (dropped here on purpose) breaks no listing, lookup or stats, of its tenant or any.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn readers_survive_a_row_outside_the_range(pool: PgPool) {
    let store = setup(&pool).await;
    store
        .enqueue(&NewJob::new(OTHER_TENANT, JOB, "{}"))
        .await
        .unwrap();
    sqlx::raw_sql(
        "ALTER TABLE sluice.jobs DROP CONSTRAINT jobs_run_at_range;
         INSERT INTO sluice.jobs (tenant, job_type, payload, max_attempts, run_at) VALUES
           ('acme', 'send-email', '', 1, 'infinity'),
           ('acme', 'send-email', '', 1, '-infinity'),
           ('acme', 'send-email', '', 1, '270000-01-01 00:00:00+00');",
    )
    .execute(&pool)
    .await
    .unwrap();
    let jobs = store.list(&JobFilter::default()).await.unwrap();
    assert_eq!(jobs.len(), 4);
    let mut seen: Vec<DateTime<Utc>> = jobs
        .iter()
        .filter(|j| j.tenant == TENANT)
        .map(|j| j.run_at)
        .collect();
    seen.sort();
    assert_eq!(seen, [RUN_AT_MIN, RUN_AT_MAX, RUN_AT_MAX]);
    for job in &jobs {
        assert!(store.get(None, job.id).await.unwrap().is_some());
    }
    let all = store.stats(None).await.unwrap();
    assert_eq!(all.totals.pending, 4);
    assert!(all.oldest_ready_age_seconds.unwrap().is_finite());
    store.stats(Some(OTHER_TENANT)).await.unwrap();
    assert_eq!(store.next_due_in(None).await.unwrap(), Some(Duration::ZERO));
}
