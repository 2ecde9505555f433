//! Retention of concurrency keys (`Store::prune_flow_keys`, run by the retention pass):
//! an idle key's `sluice.flow_keys` row goes; a key with a job pending or running, or a
//! per-key bucket not yet full, keeps it; a key used again after its row went gets a new
//! one and its job is claimed. And the race the two-statement prune is built for: an
//! enqueue into a key while it is being pruned never leaves a pending job without a
//! ready row (the claim would never find it). The retention run reports the count
//! (`maintenance.rs` covers the run itself).

use std::time::Duration;

use sluice_store::{
    ClaimedJob, Completion, FlowChange, MaintenanceRun, NewJob, Rate, RetentionPolicy, RunAt, Store,
};
use sqlx::PgPool;

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

fn keyed(job_type: &str, key: &str) -> NewJob {
    NewJob::new(TENANT, job_type, &b"{}"[..]).with_concurrency_key(key)
}

/// The keys of `job_type` that have a row, sorted.
async fn keys(pool: &PgPool, job_type: &str) -> Vec<String> {
    sqlx::query_scalar("SELECT key FROM sluice.flow_keys WHERE job_type = $1 ORDER BY key")
        .bind(job_type)
        .fetch_all(pool)
        .await
        .unwrap()
}

async fn claim(store: &Store) -> Vec<ClaimedJob> {
    store.claim(&claim_req("w", 10)).await.unwrap()
}

/// Enqueues one job in `key` and runs it to completion: the key is idle, with a row.
async fn used_once(store: &Store, job_type: &str, key: &str) {
    let id = store.enqueue(&keyed(job_type, key)).await.unwrap().id;
    let claimed = claim(store).await;
    let job = claimed.iter().find(|j| j.id == id).expect("claimed");
    store.complete(&job.lease, &done()).await.unwrap();
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn idle_keys_are_pruned_and_keys_with_work_or_a_spent_bucket_are_kept(pool: PgPool) {
    let store = setup(&pool).await;
    set(&store, per_key(1)).await;
    let rated = FlowChange {
        rate_per_key: Some(Some(Rate::parse("1/1h").unwrap())),
        ..Default::default()
    };
    store.set_flow(TENANT, ONCE, &rated).await.unwrap();

    used_once(&store, JOB, "idle").await;
    used_once(&store, JOB, "idle-too").await;
    // Pending: enqueued for later, and nothing of it claimed.
    let later = keyed(JOB, "pending").with_run_at(RunAt::Delay(Duration::from_secs(3600)));
    store.enqueue(&later).await.unwrap();
    store.enqueue(&keyed(JOB, "running")).await.unwrap();
    let running = claim(&store).await;
    assert_eq!(running.len(), 1);
    // Its one token per hour spent: a new row would start with a full bucket.
    used_once(&store, ONCE, "spent").await;
    assert_eq!(
        keys(&pool, JOB).await,
        ["idle", "idle-too", "pending", "running"]
    );

    assert_eq!(
        store.prune_flow_keys(1).await.unwrap(),
        2,
        "one key a batch"
    );
    assert_eq!(keys(&pool, JOB).await, ["pending", "running"]);
    assert_eq!(keys(&pool, ONCE).await, ["spent"]);
    assert_eq!(store.prune_flow_keys(1000).await.unwrap(), 0);

    // The running job ends: its key is idle now.
    store.complete(&running[0].lease, &done()).await.unwrap();
    assert_eq!(store.prune_flow_keys(1000).await.unwrap(), 1);
    assert_eq!(keys(&pool, JOB).await, ["pending"]);

    // A pruned key used again: a new row, ready, and the key's cap holds.
    let ids: Vec<i64> = store
        .enqueue_many(&[keyed(JOB, "idle"), keyed(JOB, "idle")])
        .await
        .unwrap()
        .iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(keys(&pool, JOB).await, ["idle", "pending"]);
    let claimed = claim(&store).await;
    assert_eq!(claimed.len(), 1, "the cap of 1 holds on the new row");
    assert!(ids.contains(&claimed[0].id));
    assert_eq!(store.prune_flow_keys(1000).await.unwrap(), 0, "busy again");

    let bad = store.prune_flow_keys(0).await.unwrap_err();
    assert!(bad.to_string().contains("batch_size"), "{bad}");
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn the_retention_run_prunes_idle_keys_and_counts_them(pool: PgPool) {
    let store = setup(&pool).await;
    set(&store, per_key(1)).await;
    used_once(&store, JOB, "a").await;
    used_once(&store, JOB, "b").await;
    let hour = Duration::from_secs(3600);
    let run = store
        .prune_if_due(&RetentionPolicy::default(), hour, "h")
        .await
        .unwrap();
    let MaintenanceRun::Ran(report) = run else {
        panic!("expected a run, got {run:?}");
    };
    assert_eq!(report.flow_keys, 2, "{report:?}");
    assert!(keys(&pool, JOB).await.is_empty());
}

/// An enqueue whose trigger holds the key's row (uncommitted) is never waited for: the
/// prune skips the key, and once the job is committed the key has work and is kept.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_key_an_open_enqueue_holds_is_skipped(pool: PgPool) {
    let store = setup(&pool).await;
    set(&store, per_key(1)).await;
    used_once(&store, JOB, "k").await;
    let mut tx = pool.begin().await.unwrap();
    sqlx::query(
        "SELECT sluice.enqueue(tenant => $1, job_type => $2, payload => '{}'::jsonb, \
         concurrency_key => 'k')",
    )
    .bind(TENANT)
    .bind(JOB)
    .execute(&mut *tx)
    .await
    .unwrap();
    let pruned = tokio::time::timeout(Duration::from_secs(5), store.prune_flow_keys(100))
        .await
        .expect("the prune does not wait for the enqueue");
    assert_eq!(pruned.unwrap(), 0);
    tx.commit().await.unwrap();
    assert_eq!(store.prune_flow_keys(100).await.unwrap(), 0);
    assert_eq!(claim(&store).await.len(), 1, "the job is claimed");
}

/// The prune's lock taken first (its step 1, by hand): an enqueue into the key waits
/// behind it; the prune's step 2 does not see the uncommitted job and deletes the row;
/// the enqueue then goes on and makes a new row, ready, so its job is claimed.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn an_enqueue_behind_the_prunes_lock_makes_the_row_again(pool: PgPool) {
    let store = setup(&pool).await;
    set(&store, per_key(1)).await;
    used_once(&store, JOB, "k").await;
    let lock = include_str!("../../sql/retention/lock_idle_flow_keys.sql");
    let delete = include_str!("../../sql/retention/delete_idle_flow_keys.sql");
    let mut prune = pool.begin().await.unwrap();
    let locked: Vec<i64> = sqlx::query_scalar(lock)
        .bind(0_i64)
        .bind(100_i64)
        .fetch_all(&mut *prune)
        .await
        .unwrap();
    assert_eq!(locked.len(), 1);
    let enqueuing = {
        let store = store.clone();
        tokio::spawn(async move { store.enqueue(&keyed(JOB, "k")).await.unwrap().id })
    };
    // The enqueue has inserted its job and waits on the row's lock in its trigger.
    wait_for_lock_wait(&pool).await;
    let deleted: Vec<i64> = sqlx::query_scalar(delete)
        .bind(&locked)
        .fetch_all(&mut *prune)
        .await
        .unwrap();
    assert_eq!(
        deleted, locked,
        "the job is not committed: the key looks idle"
    );
    prune.commit().await.unwrap();
    let id = enqueuing.await.unwrap();
    assert_eq!(keys(&pool, JOB).await, ["k"], "a new row");
    let claimed = claim(&store).await;
    assert_eq!(claimed.iter().map(|j| j.id).collect::<Vec<_>>(), [id]);
}

/// Waits until some session of this database waits for a row lock.
async fn wait_for_lock_wait(pool: &PgPool) {
    for _ in 0..500 {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(pool)
        .await
        .unwrap();
        if waiting > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the enqueue never waited for the prune's lock");
}

/// Enqueues and prunes of the same key at the same time, many rounds: after each, the
/// key's pending job has a row that is ready, and the claim gets it.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn enqueues_racing_prunes_never_strand_a_pending_job(pool: PgPool) {
    let store = setup(&pool).await;
    set(&store, per_key(1)).await;
    let mut pruned = 0;
    for round in 0..150_u64 {
        // The key is idle, with a row: the prune would delete it.
        used_once(&store, JOB, "k").await;
        let head_start = Duration::from_micros(round % 7 * 300);
        let (enqueued, prune) = tokio::join!(
            async {
                tokio::time::sleep(head_start).await;
                store.enqueue(&keyed(JOB, "k")).await.unwrap().id
            },
            store.prune_flow_keys(100),
        );
        pruned += prune.unwrap();
        let ready: Option<bool> = sqlx::query_scalar(
            "SELECT ready_at IS NOT NULL FROM sluice.flow_keys WHERE job_type = $1 AND key = 'k'",
        )
        .bind(JOB)
        .fetch_optional(&pool)
        .await
        .unwrap();
        assert_eq!(
            ready,
            Some(true),
            "round {round}: the pending job's key is ready"
        );
        let claimed = claim(&store).await;
        assert_eq!(
            claimed.iter().map(|j| j.id).collect::<Vec<_>>(),
            [enqueued],
            "round {round}"
        );
        store.complete(&claimed[0].lease, &done()).await.unwrap();
    }
    eprintln!("{pruned} of 150 rounds pruned the key before the enqueue made it again");
}
