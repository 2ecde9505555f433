//! Flow control across a fleet (migration 0024): many claimers racing on their own
//! connections never over-admit a key's or a type's cap, and a claim beside a large
//! backlog held back by its keys reads none of it.

use std::sync::Arc;

use sluice_store::{Completion, FlowChange, NewJob};
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::common::*;
use crate::flow::{per_key, set};

fn done() -> Completion {
    Completion {
        output: Vec::new(),
        fuel_used: None,
        follow_ups: Vec::new(),
        log: None,
    }
}

/// The most jobs running at once for one key, and for the type, right now.
async fn running_peaks(pool: &PgPool) -> (i64, i64) {
    sqlx::query_as(
        "SELECT coalesce(max(n), 0), coalesce(sum(n), 0)::int8 FROM (SELECT count(*) AS n \
         FROM sluice.jobs WHERE state = 'running' GROUP BY flow_key) k",
    )
    .fetch_one(pool)
    .await
    .unwrap()
}

/// 16 claimers race, round after round, over 20 keys × 5 jobs with at most one running
/// per key and at most 12 for the type: no round ever shows two of one key or 13 running.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn racing_claimers_never_over_admit_a_key_or_a_type(
    _: PgPoolOptions,
    opts: PgConnectOptions,
) {
    let pool = PgPoolOptions::new()
        .max_connections(17)
        .connect_with(opts)
        .await
        .unwrap();
    let store = setup(&pool).await;
    set(&store, per_key(1)).await;
    set(
        &store,
        FlowChange {
            max_running: Some(Some(12)),
            ..Default::default()
        },
    )
    .await;
    let jobs: Vec<NewJob> = (0..100)
        .map(|i| job(&i.to_string()).with_concurrency_key(format!("k{}", i % 20)))
        .collect();
    store.enqueue_many(&jobs).await.unwrap();
    let mut total = 0;
    for round in 0..12 {
        let barrier = Arc::new(tokio::sync::Barrier::new(16));
        let mut tasks = Vec::new();
        for w in 0..16 {
            let (store, barrier) = (store.clone(), barrier.clone());
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                store.claim(&claim_req(&format!("w-{w}"), 2)).await.unwrap()
            }));
        }
        let mut claimed = Vec::new();
        for t in tasks {
            claimed.extend(t.await.unwrap());
        }
        let (per_key_peak, running) = running_peaks(&pool).await;
        assert!(
            per_key_peak <= 1,
            "round {round}: a key runs {per_key_peak}"
        );
        assert!(running <= 12, "round {round}: the type runs {running}");
        // Finish them, so their keys and the type have room for the next round.
        for job in &claimed {
            store.complete(&job.lease, &done()).await.unwrap();
            total += 1;
        }
    }
    assert!(total >= 50, "the keys made progress: {total}");
    // The rest, one claimer at a time: nothing was lost.
    while total < 100 {
        let claimed = store.claim(&claim_req("last", 20)).await.unwrap();
        assert!(
            !claimed.is_empty() && claimed.len() <= 12,
            "{total}: {claimed:?}"
        );
        for job in &claimed {
            store.complete(&job.lease, &done()).await.unwrap();
            total += 1;
        }
    }
}

/// Index entries read through the indexes of `sluice.jobs`, and its sequential scans,
/// so far.
async fn jobs_reads(pool: &PgPool) -> (i64, i64) {
    sqlx::query("SELECT pg_stat_force_next_flush()")
        .execute(pool)
        .await
        .unwrap();
    sqlx::query_as(
        "SELECT (SELECT sum(idx_tup_read)::int8 FROM pg_stat_user_indexes \
                 WHERE schemaname = 'sluice' AND relname = 'jobs'), \
                (SELECT seq_scan FROM pg_stat_user_tables \
                 WHERE schemaname = 'sluice' AND relname = 'jobs')",
    )
    .fetch_one(pool)
    .await
    .unwrap()
}

/// 10,000 keys each at its cap of one running job, 100,000 jobs pending behind them, and
/// a few plain jobs of another tenant: a claim takes the plain jobs and reads a handful
/// of rows, not the held-back backlog (its cost does not grow with it).
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_claim_beside_ten_thousand_keys_at_their_cap_reads_none_of_their_backlog(pool: PgPool) {
    let store = setup(&pool).await;
    set(&store, per_key(1)).await;
    for chunk in 0..10 {
        let jobs: Vec<NewJob> = (0..11_000)
            .map(|i| job("x").with_concurrency_key(format!("k{}", (chunk * 11_000 + i) % 10_000)))
            .collect();
        store.enqueue_many(&jobs).await.unwrap();
    }
    // One claim per key: every key runs its one job.
    let mut running = 0;
    while running < 10_000 {
        let n = store.claim(&claim_req("busy", 5000)).await.unwrap().len();
        assert!(n > 0, "stalled at {running}");
        running += n;
    }
    assert!(
        store
            .claim(&claim_req("busy", 100))
            .await
            .unwrap()
            .is_empty()
    );
    sqlx::query("ANALYZE sluice.jobs")
        .execute(&pool)
        .await
        .unwrap();
    let (pending,): (i64,) =
        sqlx::query_as("SELECT count(*) FROM sluice.jobs WHERE state = 'pending'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(pending, 100_000);
    let others: Vec<NewJob> = (0..5)
        .map(|i| NewJob::new(OTHER_TENANT, JOB, i.to_string().into_bytes()))
        .collect();
    store.enqueue_many(&others).await.unwrap();

    let (reads_before, scans_before) = jobs_reads(&pool).await;
    let claimed = store.claim(&claim_req("w", 10)).await.unwrap();
    let (reads_after, scans_after) = jobs_reads(&pool).await;
    assert_eq!(claimed.len(), 5, "{claimed:?}");
    assert!(claimed.iter().all(|j| j.tenant == OTHER_TENANT));
    assert_eq!(scans_after, scans_before, "no sequential scan of jobs");
    let read = reads_after - reads_before;
    assert!(read < 200, "the claim read {read} job index entries");

    // The keys' lane is not read either: no key is ready.
    let ready: i64 =
        sqlx::query_scalar("SELECT count(*) FROM sluice.flow_keys WHERE ready_at IS NOT NULL")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(ready, 0);
    let plan: Vec<String> = sqlx::query_scalar(
        "EXPLAIN SELECT k.id FROM sluice.flow_keys k WHERE k.tenant = 'acme' \
         AND k.job_type = 'send-email' AND k.ready_at IS NOT NULL AND k.ready_at <= now() \
         ORDER BY k.ready_at LIMIT 10 FOR UPDATE SKIP LOCKED",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let plan = plan.join("\n");
    assert!(plan.contains("flow_keys_ready_idx"), "{plan}");
    assert!(!plan.contains("Seq Scan"), "{plan}");
}
