//! The edges of the input domain (issue #16): text with U+0000, instants Postgres takes
//! but chrono cannot read, and "no timeout". Each refusal names its field and writes
//! nothing; a lookup by a name no row can have finds nothing; readers survive a row
//! written before the range was enforced.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use sluice_store::{
    Failure, JobFilter, JobTypeSpec, MAX_DELAY, NewComponent, NewJob, NewSchedule, RUN_AT_MAX,
    RUN_AT_MIN, RunAt, StoreError, TenantLimits,
};
use sqlx::PgPool;
use sqlx::postgres::PgDatabaseError;

use crate::common::*;

fn invalid_field(result: Result<impl std::fmt::Debug, StoreError>) -> &'static str {
    match result {
        Err(StoreError::InvalidInput { field, message }) => {
            assert!(
                message.contains("NUL")
                    || message.contains("range")
                    || message.contains("delay")
                    || message.contains("1 ms")
                    || message.contains("cap"),
                "{field}: {message}"
            );
            field
        }
        other => panic!("expected InvalidInput, got {other:?}"),
    }
}

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

/// The refusal of a statement: (SQLSTATE, COLUMN, message).
async fn refusal(pool: &PgPool, sql: &str) -> (String, String, String) {
    let err = sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(pool)
        .await
        .unwrap_err();
    let pg = err
        .as_database_error()
        .unwrap_or_else(|| panic!("not a database error: {err}"))
        .downcast_ref::<PgDatabaseError>();
    (
        pg.code().to_owned(),
        pg.column().unwrap_or_default().to_owned(),
        pg.message().to_owned(),
    )
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
