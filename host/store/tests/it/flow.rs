//! Flow control in the claim (migration 0024, docs/flow-control.md): pausing types and
//! tenants, caps per concurrency key and per type, rate limits per type and per key,
//! fair turns between keys, and the reason a held-back job gives. One claimer per test;
//! `flow_fleet.rs` races many and reads the plan's cost.

use std::collections::HashMap;

use sluice_store::{ClaimedJob, Completion, FlowChange, Held, NewJob, Rate, Store};
use sqlx::PgPool;

use crate::common::*;

fn done() -> Completion {
    Completion {
        output: Vec::new(),
        fuel_used: None,
        follow_ups: Vec::new(),
        log: None,
    }
}

fn keyed(key: &str, n: usize) -> Vec<NewJob> {
    (0..n)
        .map(|i| job(&format!("{key}-{i}")).with_concurrency_key(key))
        .collect()
}

pub async fn set(store: &Store, change: FlowChange) {
    store.set_flow(TENANT, JOB, &change).await.unwrap();
}

pub fn per_key(n: u32) -> FlowChange {
    FlowChange {
        max_running_per_key: Some(Some(n)),
        ..Default::default()
    }
}

async fn claim(store: &Store, limit: u32) -> Vec<ClaimedJob> {
    store.claim(&claim_req("w", limit)).await.unwrap()
}

/// Claimed jobs per concurrency key (read back from the rows).
async fn by_key(pool: &PgPool, jobs: &[ClaimedJob]) -> HashMap<String, usize> {
    let ids: Vec<i64> = jobs.iter().map(|j| j.id).collect();
    let keys: Vec<Option<String>> =
        sqlx::query_scalar("SELECT flow_key FROM sluice.jobs WHERE id = ANY($1)")
            .bind(&ids)
            .fetch_all(pool)
            .await
            .unwrap();
    let mut out = HashMap::new();
    for key in keys {
        *out.entry(key.unwrap_or_default()).or_default() += 1;
    }
    out
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_paused_type_is_not_claimed_its_running_job_finishes_and_resume_releases_all(
    pool: PgPool,
) {
    let store = setup(&pool).await;
    let ids: Vec<i64> = store
        .enqueue_many(&(0..5).map(|i| job(&i.to_string())).collect::<Vec<_>>())
        .await
        .unwrap()
        .iter()
        .map(|e| e.id)
        .collect();
    let running = claim_one(&store, "w").await;
    let pause = FlowChange {
        paused: Some(true),
        ..Default::default()
    };
    set(&store, pause).await;
    // Enqueued while paused: held too. Another type of the tenant is not.
    store.enqueue(&job("late")).await.unwrap();
    store
        .enqueue(&NewJob::new(TENANT, ONCE, b"other".to_vec()))
        .await
        .unwrap();
    let claimed = claim(&store, 10).await;
    assert_eq!(claimed.len(), 1, "{claimed:?}");
    assert_eq!(claimed[0].job_type, ONCE);
    assert_eq!(
        store.job_held(ids[1], None).await.unwrap(),
        Some(Held::TypePaused)
    );
    assert!(store.get_flow(TENANT, JOB).await.unwrap().unwrap().paused);
    // The job running at pause time finishes.
    store.complete(&running.lease, &done()).await.unwrap();

    set(
        &store,
        FlowChange {
            paused: Some(false),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(store.job_held(ids[1], None).await.unwrap(), None);
    assert_eq!(claim(&store, 10).await.len(), 5);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_paused_tenant_is_not_claimed_until_resumed(pool: PgPool) {
    let store = setup(&pool).await;
    let held = store.enqueue(&job("a")).await.unwrap().id;
    store.enqueue_many(&keyed("k", 2)).await.unwrap();
    store
        .enqueue(&NewJob::new(OTHER_TENANT, JOB, b"b".to_vec()))
        .await
        .unwrap();
    store.set_tenant_paused(TENANT, true).await.unwrap();
    assert!(store.get_tenant(TENANT).await.unwrap().unwrap().paused);
    let claimed = claim(&store, 10).await;
    assert_eq!(claimed.len(), 1, "{claimed:?}");
    assert_eq!(claimed[0].tenant, OTHER_TENANT);
    assert_eq!(
        store.job_held(held, None).await.unwrap(),
        Some(Held::TenantPaused)
    );
    store.set_tenant_paused(TENANT, false).await.unwrap();
    assert_eq!(claim(&store, 10).await.len(), 3);
    assert!(store.set_tenant_paused("nobody", true).await.is_err());
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_key_never_runs_more_than_its_cap_and_a_finished_job_frees_its_slot(pool: PgPool) {
    let store = setup(&pool).await;
    set(&store, per_key(2)).await;
    store.enqueue_many(&keyed("a", 6)).await.unwrap();
    let b = store.enqueue_many(&keyed("b", 1)).await.unwrap()[0].id;
    store.enqueue(&job("no key")).await.unwrap();

    let first = claim(&store, 10).await;
    let counts = by_key(&pool, &first).await;
    assert_eq!(counts.get("a"), Some(&2), "{counts:?}");
    assert_eq!(counts.get("b"), Some(&1), "{counts:?}");
    // Jobs without a key have no per-key cap.
    assert_eq!(counts.get(""), Some(&1), "{counts:?}");
    assert!(claim(&store, 10).await.is_empty());
    let a_pending: i64 = sqlx::query_scalar(
        "SELECT id FROM sluice.jobs WHERE flow_key = 'a' AND state = 'pending' ORDER BY id LIMIT 1",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(
        store.job_held(a_pending, Some(TENANT)).await.unwrap(),
        Some(Held::KeyAtCap {
            key: "a".into(),
            running: 2,
            max: 2
        })
    );
    assert_eq!(
        store
            .job_held(a_pending, Some(TENANT))
            .await
            .unwrap()
            .unwrap()
            .to_string(),
        "waiting for key a (2/2 running)"
    );
    assert!(first.iter().any(|j| j.id == b));

    // One of a's ends (failed and retried: it is pending again, behind its key's cap).
    let a_job = first
        .iter()
        .find(|j| j.id != b && j.payload.starts_with(b"a-"))
        .unwrap();
    store.complete(&a_job.lease, &done()).await.unwrap();
    let next = claim(&store, 10).await;
    assert_eq!(by_key(&pool, &next).await.get("a"), Some(&1), "{next:?}");
    assert!(claim(&store, 10).await.is_empty());

    // Raising the cap takes effect at the next claim.
    set(&store, per_key(3)).await;
    assert_eq!(
        by_key(&pool, &claim(&store, 10).await).await.get("a"),
        Some(&1)
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_key_with_a_long_queue_does_not_starve_a_key_with_one_job(pool: PgPool) {
    let store = setup(&pool).await;
    store.enqueue_many(&keyed("big", 2000)).await.unwrap();
    store.enqueue_many(&keyed("small", 1)).await.unwrap();
    // No cap at all: the keys still take turns, one job each before either's second.
    let first = claim(&store, 1).await;
    let second = claim(&store, 1).await;
    let keys = by_key(&pool, &[first, second].concat()).await;
    assert_eq!(keys.get("big"), Some(&1), "{keys:?}");
    assert_eq!(keys.get("small"), Some(&1), "{keys:?}");

    // With a cap of 1, one claim of many slots takes one of each key.
    store.enqueue_many(&keyed("small", 1)).await.unwrap();
    set(&store, per_key(1)).await;
    let jobs: Vec<ClaimedJob> = claim(&store, 50).await;
    assert!(jobs.is_empty(), "both keys already run one: {jobs:?}");
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_type_cap_counts_jobs_with_and_without_keys(pool: PgPool) {
    let store = setup(&pool).await;
    store.enqueue_many(&keyed("a", 4)).await.unwrap();
    let plain = store.enqueue(&job("plain")).await.unwrap().id;
    set(
        &store,
        FlowChange {
            max_running: Some(Some(3)),
            ..Default::default()
        },
    )
    .await;
    let first = claim(&store, 10).await;
    assert_eq!(first.len(), 3, "{first:?}");
    assert!(claim(&store, 10).await.is_empty());
    let held = sqlx::query_scalar::<_, i64>(
        "SELECT id FROM sluice.jobs WHERE state = 'pending' AND job_type = $1 LIMIT 1",
    )
    .bind(JOB)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(
        store.job_held(held, None).await.unwrap(),
        Some(Held::TypeAtCap { running: 3, max: 3 })
    );
    store.complete(&first[0].lease, &done()).await.unwrap();
    assert_eq!(claim(&store, 10).await.len(), 1);
    // Lifting the cap releases the rest, the job without a key included.
    set(
        &store,
        FlowChange {
            max_running: Some(None),
            ..Default::default()
        },
    )
    .await;
    let rest = claim(&store, 10).await;
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert!(first.iter().chain(&rest).any(|j| j.id == plain) || rest.len() == 1);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_rate_limit_spends_tokens_and_refills_with_time_without_spending_attempts(pool: PgPool) {
    let store = setup(&pool).await;
    set(
        &store,
        FlowChange {
            rate: Some(Some(Rate::parse("5/1m").unwrap())),
            ..Default::default()
        },
    )
    .await;
    let ids: Vec<i64> = store
        .enqueue_many(&(0..15).map(|i| job(&i.to_string())).collect::<Vec<_>>())
        .await
        .unwrap()
        .iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(claim(&store, 15).await.len(), 5);
    assert!(claim(&store, 15).await.is_empty());
    let held_id = sqlx::query_scalar::<_, i64>(
        "SELECT id FROM sluice.jobs WHERE id = ANY($1) AND state = 'pending' LIMIT 1",
    )
    .bind(&ids)
    .fetch_one(&pool)
    .await
    .unwrap();
    match store.job_held(held_id, None).await.unwrap() {
        Some(Held::RateLimited { until }) => {
            let wait = until - db_now(&pool).await;
            // A token per 12 s.
            assert!(wait.num_milliseconds() > 6_000 && wait.num_milliseconds() <= 12_000);
        }
        other => panic!("{other:?}"),
    }
    let attempts: i32 = sqlx::query_scalar("SELECT attempt FROM sluice.jobs WHERE id = $1")
        .bind(held_id)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(attempts, 0, "held back, no attempt spent");
    // A minute passes (moved in SQL): five more tokens, and no more.
    sqlx::query(
        "UPDATE sluice.job_types SET rate_refilled_at = rate_refilled_at - interval '1 minute'",
    )
    .execute(&pool)
    .await
    .unwrap();
    assert_eq!(claim(&store, 15).await.len(), 5);
    assert!(claim(&store, 15).await.is_empty());
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_per_key_rate_limits_each_key_alone(pool: PgPool) {
    let store = setup(&pool).await;
    set(
        &store,
        FlowChange {
            rate_per_key: Some(Some(Rate::parse("2/1m").unwrap())),
            ..Default::default()
        },
    )
    .await;
    store.enqueue_many(&keyed("a", 5)).await.unwrap();
    store.enqueue_many(&keyed("b", 5)).await.unwrap();
    let claimed = claim(&store, 10).await;
    let counts = by_key(&pool, &claimed).await;
    assert_eq!(
        (counts.get("a"), counts.get("b")),
        (Some(&2), Some(&2)),
        "{counts:?}"
    );
    assert!(claim(&store, 10).await.is_empty());
    let held = sqlx::query_scalar::<_, i64>(
        "SELECT id FROM sluice.jobs WHERE flow_key = 'a' AND state = 'pending' LIMIT 1",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    let reason = store.job_held(held, None).await.unwrap().unwrap();
    assert!(
        matches!(&reason, Held::KeyRateLimited { key, .. } if key == "a"),
        "{reason:?}"
    );
    assert!(reason.to_string().starts_with("key a rate limited until "));
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn the_sql_enqueue_takes_a_concurrency_key_and_old_calls_still_work(pool: PgPool) {
    let store = setup(&pool).await;
    set(&store, per_key(1)).await;
    for (key, n) in [("x", 3), ("y", 1)] {
        for _ in 0..n {
            sqlx::query(
                "SELECT sluice.enqueue(tenant => $1, job_type => $2, payload => '{}'::jsonb, \
                 concurrency_key => $3)",
            )
            .bind(TENANT)
            .bind(JOB)
            .bind(key)
            .execute(&pool)
            .await
            .unwrap();
        }
    }
    sqlx::query("SELECT sluice.enqueue('acme', 'send-email', '{}'::jsonb, 10)")
        .execute(&pool)
        .await
        .unwrap();
    let bad = sqlx::query(
        "SELECT sluice.enqueue(tenant => 'acme', job_type => 'send-email', \
         payload => '{}'::jsonb, concurrency_key => '')",
    )
    .execute(&pool)
    .await
    .unwrap_err();
    assert!(bad.to_string().contains("concurrency_key"), "{bad}");
    let counts = by_key(&pool, &claim(&store, 10).await).await;
    assert_eq!(
        (counts.get("x"), counts.get("y"), counts.get("")),
        (Some(&1), Some(&1), Some(&1)),
        "{counts:?}"
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn bad_flow_settings_and_keys_are_refused(pool: PgPool) {
    let store = setup(&pool).await;
    let err = store
        .set_flow(TENANT, "nope", &per_key(1))
        .await
        .unwrap_err();
    assert!(
        matches!(err, sluice_store::StoreError::UnknownJobType { .. }),
        "{err:?}"
    );
    assert!(store.set_flow(TENANT, JOB, &per_key(0)).await.is_err());
    let long = "k".repeat(256);
    assert!(
        store
            .enqueue(&job("x").with_concurrency_key(long))
            .await
            .is_err()
    );
    assert!(
        store
            .enqueue(&job("x").with_concurrency_key(""))
            .await
            .is_err()
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn stats_count_the_held_back_jobs_by_reason_and_the_type_shows_its_controls(pool: PgPool) {
    let store = setup(&pool).await;
    set(&store, per_key(1)).await;
    store.enqueue_many(&keyed("a", 3)).await.unwrap();
    store.enqueue_many(&keyed("b", 1)).await.unwrap();
    assert_eq!(claim(&store, 10).await.len(), 2);
    let stats = store.stats(Some(TENANT)).await.unwrap();
    let row = stats.types.iter().find(|t| t.job_type == JOB).unwrap();
    assert_eq!(row.held.key_cap, 2, "{row:?}");
    assert!(!row.paused);

    set(
        &store,
        FlowChange {
            paused: Some(true),
            rate: Some(Some(Rate::parse("10/1h").unwrap())),
            ..Default::default()
        },
    )
    .await;
    let record = store.get_job_type(TENANT, JOB).await.unwrap().unwrap();
    assert!(record.flow.paused);
    assert_eq!(record.flow.max_running_per_key, Some(1));
    assert_eq!(record.flow.rate().unwrap().to_string(), "10/1h");
    let stats = store.stats(Some(TENANT)).await.unwrap();
    let row = stats.types.iter().find(|t| t.job_type == JOB).unwrap();
    assert!(row.paused);
    assert_eq!((row.held.paused, row.held.key_cap), (2, 0), "{row:?}");
}
