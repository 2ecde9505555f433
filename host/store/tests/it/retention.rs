//! Test 9: prune deletes only what is past retention, in bounded batches.

use sluice_store::RetentionPolicy;
use sqlx::PgPool;

use crate::common::*;

/// Creates `n` jobs in `state` ('completed', 'dead', 'cancelled'), then backdates
/// `finished_at` by `age`. Returns their ids.
async fn finished(
    store: &sluice_store::Store,
    pool: &PgPool,
    n: usize,
    state: &str,
    age: &str,
) -> Vec<i64> {
    let jobs = jobs(store).worker("w");
    let mut ids = Vec::new();
    for i in 0..n {
        let job = job(&i.to_string()).with_max_attempts(1);
        ids.push(match state {
            "completed" => jobs.completed(job).await,
            "dead" => jobs.dead(job, "boom").await,
            "cancelled" => jobs.cancelled(job).await,
            other => panic!("{other} is not a finished state"),
        });
    }
    finished_ago(pool, &ids, age).await;
    ids
}

async fn remaining(pool: &PgPool, ids: &[i64]) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM sluice.jobs WHERE id = ANY($1)")
        .bind(ids)
        .fetch_one(pool)
        .await
        .unwrap()
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn prune_deletes_only_expired_jobs_in_bounded_batches(pool: PgPool) {
    let store = setup(&pool).await;
    let old_completed = finished(&store, &pool, 25, "completed", "4 days").await;
    let young_completed = finished(&store, &pool, 5, "completed", "2 days").await;
    let old_dead = finished(&store, &pool, 8, "dead", "31 days").await;
    let young_dead = finished(&store, &pool, 3, "dead", "10 days").await;
    let old_cancelled = finished(&store, &pool, 4, "cancelled", "31 days").await;
    let young_cancelled = finished(&store, &pool, 2, "cancelled", "29 days").await;
    // Unfinished jobs are never pruned, however old.
    let running = jobs(&store).worker("w").running(job("busy")).await.id;
    let pending = jobs(&store).pending(job("waiting")).await;
    sqlx::query("UPDATE sluice.jobs SET created_at = now() - interval '1 year', run_at = now() - interval '1 year' WHERE id = ANY($1)")
        .bind(vec![pending, running])
        .execute(&pool)
        .await
        .unwrap();

    let policy = RetentionPolicy {
        batch_size: 10,
        ..RetentionPolicy::default()
    };
    // One batch deletes at most batch_size rows, completed ones first.
    let one = store.prune_batch(&policy).await.unwrap();
    assert_eq!(
        (one.deleted, one.completed, one.dead, one.batches),
        (10, 10, 0, 1)
    );
    assert_eq!(remaining(&pool, &old_completed).await, 15);

    // The rest: 15 completed + 12 dead/cancelled = 27 in batches of 10, 10, 7.
    let rest = store.prune(&policy).await.unwrap();
    assert_eq!(
        (rest.deleted, rest.completed, rest.dead, rest.batches),
        (27, 15, 12, 3)
    );

    for ids in [&old_completed, &old_dead, &old_cancelled] {
        assert_eq!(remaining(&pool, ids).await, 0);
    }
    assert_eq!(remaining(&pool, &young_completed).await, 5);
    assert_eq!(remaining(&pool, &young_dead).await, 3);
    assert_eq!(remaining(&pool, &young_cancelled).await, 2);
    assert_eq!(remaining(&pool, &[pending, running]).await, 2);

    // The attempt history went with the jobs.
    let orphans: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM sluice.job_attempts a \
         WHERE NOT EXISTS (SELECT 1 FROM sluice.jobs j WHERE j.id = a.job_id)",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(orphans, 0);
    let attempts: i64 = sqlx::query_scalar("SELECT count(*) FROM sluice.job_attempts")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(
        attempts,
        5 + 3 + 1,
        "young completed + young dead + the running one"
    );

    // Nothing left to do.
    let again = store.prune(&policy).await.unwrap();
    assert_eq!((again.deleted, again.batches), (0, 1));
    assert!(
        store
            .prune_batch(&RetentionPolicy {
                batch_size: 0,
                ..policy
            })
            .await
            .is_err()
    );
}
