//! The worker's hot statements keep finding rows by key when the jobs table grows under
//! plans its session made while the table was small (migration 0020): a new database,
//! or autovacuum off, leaves `sluice.jobs` without statistics, and a plan cached then
//! must not become a scan of the whole table.

use std::time::Duration;

use sluice_store::{Completion, Failure, NewJob, Store};
use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;

use crate::common::*;

/// Sequential scans of `sluice.jobs` counted so far, as seen after this connection's
/// own statistics are flushed.
async fn seq_scans(pool: &PgPool) -> i64 {
    sqlx::query("SELECT pg_stat_force_next_flush()")
        .execute(pool)
        .await
        .unwrap();
    sqlx::query_scalar(
        "SELECT seq_scan FROM pg_stat_user_tables WHERE schemaname = 'sluice' AND relname = 'jobs'",
    )
    .fetch_one(pool)
    .await
    .unwrap()
}

const LEASE: Duration = Duration::from_secs(30);

fn done() -> Completion {
    Completion {
        output: b"ok".to_vec(),
        fuel_used: None,
        follow_ups: Vec::new(),
        log: None,
    }
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn claims_heartbeats_and_outcomes_planned_on_a_small_table_do_not_scan_it_once_it_grows(
    pool: PgPool,
) {
    setup(&pool).await;
    // One connection, so every statement below runs in the session that planned it.
    let options = pool.connect_options().as_ref().clone();
    let one = PgPoolOptions::new()
        .max_connections(1)
        .connect_with(options)
        .await
        .unwrap();
    let store = Store::new(one.clone());
    // Planned while the table holds a handful of rows (a generic plan is kept after a
    // few executions, so run them more than that).
    for i in 0..16 {
        store.enqueue(&job(&format!("small-{i}"))).await.unwrap();
        let claimed = claim_one(&store, "w").await;
        store.heartbeat("w", &[claimed.lease], LEASE).await.unwrap();
        if i % 2 == 0 {
            store.complete(&claimed.lease, &done()).await.unwrap();
        } else {
            store
                .fail(&claimed.lease, &Failure::fatal("boom"))
                .await
                .unwrap();
        }
    }
    let backlog: Vec<NewJob> = (0..3000).map(|i| job(&format!("big-{i}"))).collect();
    store.enqueue_many(&backlog).await.unwrap();

    let before = seq_scans(&one).await;
    for _ in 0..3 {
        let claimed = store.claim(&claim_req("w", 20)).await.unwrap();
        assert_eq!(claimed.len(), 20);
        let leases: Vec<_> = claimed.iter().map(|c| c.lease).collect();
        let report = store.heartbeat("w", &leases, LEASE).await.unwrap();
        assert!(report.lost.is_empty(), "{report:?}");
        let (completed, failed) = claimed.split_at(10);
        let outcomes: Vec<_> = completed.iter().map(|c| (c.lease, done())).collect();
        let results = store.complete_many(&outcomes).await.unwrap();
        assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
        let failures: Vec<_> = failed
            .iter()
            .map(|c| (c.lease, Failure::retry("boom")))
            .collect();
        let results = store.fail_many(&failures).await.unwrap();
        assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
    }
    assert_eq!(
        seq_scans(&one).await,
        before,
        "a claim, heartbeat or batched outcome scanned the whole jobs table"
    );
}
