//! Usage metering and daily quotas (migration 0033, docs/usage.md): what workers add is
//! summed per tenant, type and hour; a tenant past a daily quota has its jobs left
//! pending by the claim, with no attempt spent, until the day rolls over or the quota is
//! raised; other tenants are not touched.

use chrono::{Duration, Utc};
use sluice_store::{
    ClaimedJob, Completion, Held, NewJob, Quota, Store, TenantLimits, UsageCounts, UsageDelta,
    UsageGrouping,
};
use sqlx::PgPool;

use crate::common::*;

async fn claim(store: &Store, limit: u32) -> Vec<ClaimedJob> {
    store.claim(&claim_req("w", limit)).await.unwrap()
}

async fn complete(store: &Store, jobs: &[ClaimedJob]) {
    for j in jobs {
        store
            .complete(&j.lease, &Completion::default())
            .await
            .unwrap();
    }
}

async fn set_quotas(store: &Store, tenant: &str, change: impl FnOnce(&mut TenantLimits)) {
    let mut limits = store.get_tenant(tenant).await.unwrap().unwrap().limits;
    change(&mut limits);
    store.set_tenant_limits(tenant, &limits).await.unwrap();
}

fn used(tenant: &str, job_type: &str, counts: UsageCounts) -> UsageDelta {
    UsageDelta {
        tenant: tenant.into(),
        job_type: job_type.into(),
        counts,
    }
}

fn ours(jobs: &[ClaimedJob]) -> usize {
    jobs.iter().filter(|j| j.tenant == TENANT).count()
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn an_attempts_quota_leaves_the_rest_pending_unspent_until_it_is_raised(pool: PgPool) {
    let store = setup(&pool).await;
    set_quotas(&store, TENANT, |l| l.max_attempts_per_day = Some(3)).await;
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(store.enqueue(&job(&format!("j{i}"))).await.unwrap().id);
    }
    store
        .enqueue(&NewJob::new(OTHER_TENANT, JOB, b"other".to_vec()))
        .await
        .unwrap();

    let first = claim(&store, 10).await;
    assert_eq!(ours(&first), 3, "{first:?}");
    assert_eq!(first.len(), 4, "the other tenant is not held: {first:?}");
    complete(&store, &first).await;
    assert!(claim(&store, 10).await.is_empty(), "the quota is used up");

    let held: Vec<i64> = ids
        .iter()
        .copied()
        .filter(|id| !first.iter().any(|j| j.id == *id))
        .collect();
    assert_eq!(held.len(), 2);
    for id in &held {
        let job = store.get(Some(TENANT), *id).await.unwrap().unwrap();
        assert_eq!(
            (job.state.as_str(), job.attempt),
            ("pending", 0),
            "no attempt spent"
        );
        assert!(job.held.is_some(), "shown with its reason");
        match store.job_held(*id, None).await.unwrap() {
            Some(Held::QuotaReached {
                quota: Quota::Attempts,
                used: 3,
                limit: 3,
                resumes_at,
            }) => {
                let tomorrow = (Utc::now() + Duration::days(1)).date_naive();
                assert_eq!(resumes_at.date_naive(), tomorrow);
                assert_eq!(resumes_at.timestamp() % 86_400, 0, "midnight UTC");
            }
            other => panic!("held by the quota, got {other:?}"),
        }
    }
    let reason = store
        .job_held(held[0], None)
        .await
        .unwrap()
        .unwrap()
        .to_string();
    assert!(
        reason.starts_with("daily attempts quota reached (3/3); resumes at "),
        "{reason}"
    );
    let stats = store.stats(Some(TENANT)).await.unwrap();
    let ours = stats.types.iter().find(|t| t.job_type == JOB).unwrap();
    assert_eq!(
        (ours.held.quota, ours.held.type_cap),
        (2, 0),
        "counted as held by the quota"
    );

    set_quotas(&store, TENANT, |l| l.max_attempts_per_day = Some(5)).await;
    let rest = claim(&store, 10).await;
    assert_eq!(rest.iter().map(|j| j.id).collect::<Vec<_>>(), held);
    complete(&store, &rest).await;
    set_quotas(&store, TENANT, |l| l.max_attempts_per_day = None).await;
    store.enqueue(&job("free")).await.unwrap();
    assert_eq!(claim(&store, 10).await.len(), 1, "no quota, no hold");
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn the_quota_day_rolls_over_at_midnight_utc(pool: PgPool) {
    let store = setup(&pool).await;
    set_quotas(&store, TENANT, |l| l.max_attempts_per_day = Some(1)).await;
    for i in 0..3 {
        store.enqueue(&job(&format!("j{i}"))).await.unwrap();
    }
    assert_eq!(claim(&store, 10).await.len(), 1);
    assert!(claim(&store, 10).await.is_empty());
    // Yesterday's count does not hold today's jobs.
    sqlx::query("UPDATE sluice.tenants SET quota_day = quota_day - 1 WHERE id = $1")
        .bind(TENANT)
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(claim(&store, 10).await.len(), 1);
    assert!(claim(&store, 10).await.is_empty());
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_quota_set_mid_day_counts_the_runs_already_metered_today(pool: PgPool) {
    let store = setup(&pool).await;
    let run = |n| UsageCounts {
        runs: n,
        ..UsageCounts::default()
    };
    store
        .record_usage(&[used(TENANT, JOB, run(2))])
        .await
        .unwrap();
    for i in 0..3 {
        store.enqueue(&job(&format!("j{i}"))).await.unwrap();
    }
    set_quotas(&store, TENANT, |l| l.max_attempts_per_day = Some(3)).await;
    assert_eq!(claim(&store, 10).await.len(), 1, "2 of 3 were used before");
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn fuel_and_egress_quotas_hold_a_tenant_once_its_metered_use_reaches_them(pool: PgPool) {
    let store = setup(&pool).await;
    set_quotas(&store, TENANT, |l| {
        l.max_fuel_per_day = Some(1_000);
        l.max_egress_bytes_per_day = Some(10_000);
    })
    .await;
    let a = store.enqueue(&job("a")).await.unwrap().id;
    store
        .enqueue(&NewJob::new(OTHER_TENANT, JOB, b"b".to_vec()))
        .await
        .unwrap();
    let fuel = |fuel| UsageCounts {
        runs: 1,
        fuel,
        ..UsageCounts::default()
    };
    // Under both: claimable (the other tenant's use does not count).
    store
        .record_usage(&[
            used(TENANT, JOB, fuel(999)),
            used(OTHER_TENANT, JOB, fuel(1 << 40)),
        ])
        .await
        .unwrap();
    assert_eq!(store.job_held(a, None).await.unwrap(), None);
    store
        .record_usage(&[used(TENANT, ONCE, fuel(1))])
        .await
        .unwrap();
    let claimed = claim(&store, 10).await;
    assert_eq!(
        (claimed.len(), claimed[0].tenant.as_str()),
        (1, OTHER_TENANT)
    );
    assert!(matches!(
        store.job_held(a, None).await.unwrap(),
        Some(Held::QuotaReached {
            quota: Quota::Fuel,
            used: 1_000,
            limit: 1_000,
            ..
        })
    ));

    set_quotas(&store, TENANT, |l| l.max_fuel_per_day = None).await;
    let bytes = UsageCounts {
        http_bytes_out: 4_000,
        http_bytes_in: 6_000,
        ..UsageCounts::default()
    };
    store
        .record_usage(&[used(TENANT, JOB, bytes)])
        .await
        .unwrap();
    assert!(claim(&store, 10).await.is_empty());
    let reason = store.job_held(a, None).await.unwrap().unwrap().to_string();
    assert!(
        reason.starts_with("daily egress bytes quota reached (10000/10000)"),
        "{reason}"
    );
    set_quotas(&store, TENANT, |l| l.max_egress_bytes_per_day = None).await;
    assert_eq!(claim(&store, 10).await.len(), 1);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn an_attempts_quota_binds_the_keys_lane_too(pool: PgPool) {
    let store = setup(&pool).await;
    set_quotas(&store, TENANT, |l| l.max_attempts_per_day = Some(2)).await;
    let keyed: Vec<NewJob> = (0..4)
        .map(|i| job(&format!("k{i}")).with_concurrency_key(format!("key-{i}")))
        .collect();
    store.enqueue_many(&keyed).await.unwrap();
    store.enqueue(&job("plain")).await.unwrap();
    assert_eq!(claim(&store, 10).await.len(), 2);
    assert!(claim(&store, 10).await.is_empty());
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn metered_usage_adds_up_per_tenant_type_and_hour_and_keeps_the_largest_peak(pool: PgPool) {
    let store = setup(&pool).await;
    let counts = |runs, peak| UsageCounts {
        runs,
        fuel: runs * 100,
        wall_ms: runs * 10,
        peak_memory_bytes: peak,
        http_requests: runs,
        http_bytes_out: 1,
        http_bytes_in: 2,
        payload_bytes: 3,
        output_bytes: 4,
        log_bytes: 5,
    };
    store
        .record_usage(&[
            used(TENANT, JOB, counts(2, 1_000)),
            used(TENANT, ONCE, counts(1, 50)),
        ])
        .await
        .unwrap();
    store
        .record_usage(&[
            used(TENANT, JOB, counts(3, 700)),
            used(OTHER_TENANT, JOB, counts(9, 1)),
        ])
        .await
        .unwrap();
    let since = Utc::now() - Duration::hours(1);

    let total = store
        .usage(Some(TENANT), since, None, UsageGrouping::Tenant)
        .await
        .unwrap();
    assert_eq!(total.len(), 1, "{total:?}");
    let c = &total[0].counts;
    assert_eq!(
        (
            c.runs,
            c.fuel,
            c.wall_ms,
            c.peak_memory_bytes,
            c.http_requests
        ),
        (6, 600, 60, 1_000, 6)
    );
    assert_eq!(
        (
            c.http_bytes_out,
            c.http_bytes_in,
            c.payload_bytes,
            c.output_bytes,
            c.log_bytes
        ),
        (3, 6, 9, 12, 15)
    );

    let by_type = store
        .usage(Some(TENANT), since, None, UsageGrouping::Type)
        .await
        .unwrap();
    let types: Vec<(Option<&str>, i64)> = by_type
        .iter()
        .map(|r| (r.job_type.as_deref(), r.counts.runs))
        .collect();
    assert_eq!(types, [(Some(ONCE), 1), (Some(JOB), 5)]);

    let by_hour = store
        .usage(None, since, None, UsageGrouping::Hour)
        .await
        .unwrap();
    assert_eq!(by_hour.len(), 2, "one hour, two tenants: {by_hour:?}");
    assert_eq!(by_hour[1].counts.runs, 9);
    let hour = by_hour[0].hour.expect("grouped by hour");
    assert_eq!(hour.timestamp() % 3_600, 0, "an hour, UTC");

    // A window that ends before the hour, or a tenant with none, reads nothing.
    let none = store
        .usage(
            Some(TENANT),
            since - Duration::hours(5),
            Some(hour),
            UsageGrouping::Tenant,
        )
        .await
        .unwrap();
    assert!(none.is_empty(), "{none:?}");
    assert!(
        store
            .usage(Some("nobody"), since, None, UsageGrouping::Tenant)
            .await
            .unwrap()
            .is_empty()
    );
}

/// The `sluice.quota.reached` events of `tenant`: (quota, used, limit).
async fn quota_events(pool: &PgPool, tenant: &str) -> Vec<(String, i64, i64)> {
    sqlx::query_as(
        "SELECT b->'data'->>'quota', (b->'data'->>'used')::int8, (b->'data'->>'limit')::int8 \
         FROM (SELECT convert_from(body, 'UTF8')::jsonb AS b FROM sluice.webhook_events \
               WHERE tenant = $1 AND event_type = 'sluice.quota.reached' ORDER BY id) e",
    )
    .bind(tenant)
    .fetch_all(pool)
    .await
    .unwrap()
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_used_up_quota_sends_one_quota_reached_event_a_day(pool: PgPool) {
    let store = setup(&pool).await;
    set_quotas(&store, TENANT, |l| l.max_fuel_per_day = Some(100)).await;
    let fuel = |fuel| UsageCounts {
        runs: 1,
        fuel,
        ..UsageCounts::default()
    };
    store
        .record_usage(&[used(TENANT, JOB, fuel(60))])
        .await
        .unwrap();
    assert!(
        quota_events(&pool, TENANT).await.is_empty(),
        "under the quota"
    );
    store
        .record_usage(&[
            used(TENANT, JOB, fuel(50)),
            used(OTHER_TENANT, JOB, fuel(1_000)),
        ])
        .await
        .unwrap();
    assert_eq!(
        quota_events(&pool, TENANT).await,
        [("fuel".to_owned(), 110, 100)]
    );
    store
        .record_usage(&[used(TENANT, JOB, fuel(5))])
        .await
        .unwrap();
    assert_eq!(quota_events(&pool, TENANT).await.len(), 1, "once a day");
    assert!(
        quota_events(&pool, OTHER_TENANT).await.is_empty(),
        "no quota, no event"
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn retention_deletes_usage_older_than_its_period_and_keeps_the_rest(pool: PgPool) {
    let store = setup(&pool).await;
    store
        .record_usage(&[used(
            TENANT,
            JOB,
            UsageCounts {
                runs: 1,
                ..UsageCounts::default()
            },
        )])
        .await
        .unwrap();
    let days = sluice_store::USAGE_RETENTION.as_secs() / 86_400;
    // Three old hours past the period (in other tenants' and types' rows too), one within.
    for (tenant, job_type, age_days) in [
        (TENANT, JOB, days + 1),
        (TENANT, ONCE, days + 2),
        (OTHER_TENANT, JOB, days + 30),
        (TENANT, JOB, days - 1),
    ] {
        sqlx::query(
            "INSERT INTO sluice.usage_hourly (tenant, hour, job_type, runs) \
             VALUES ($1, date_trunc('hour', now() - $3 * interval '1 day'), $2, 1)",
        )
        .bind(tenant)
        .bind(job_type)
        .bind(age_days as i64)
        .execute(&pool)
        .await
        .unwrap();
    }
    let policy = sluice_store::RetentionPolicy {
        batch_size: 2,
        ..Default::default()
    };
    let run = store
        .prune_if_due(&policy, std::time::Duration::from_secs(3600), "h")
        .await
        .unwrap();
    let sluice_store::MaintenanceRun::Ran(report) = run else {
        panic!("expected a prune, got {run:?}");
    };
    assert_eq!(report.usage_rows, 3, "{report:?}");
    let ages: Vec<i32> = sqlx::query_scalar(
        "SELECT extract(day FROM now() - hour)::int FROM sluice.usage_hourly ORDER BY hour",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(ages, [days as i32 - 1, 0]);
}
