//! Batched completion keeps fencing, and the depth queries an idle worker sleeps on.

use std::time::Duration;

use sluice_store::{AttemptOutcome, Completion, JobState, RunAt, StoreError};
use sqlx::PgPool;

use crate::common::*;

fn done(output: &str) -> Completion {
    Completion {
        output: output.as_bytes().to_vec(),
        fuel_used: Some(7),
    }
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_batch_applies_every_live_lease_and_drops_the_stale_one(pool: PgPool) {
    let store = setup(&pool).await;
    for i in 0..5 {
        store.enqueue(&job(&i.to_string())).await.unwrap();
    }
    let claimed = store.claim(&claim_req("w1", 5)).await.unwrap();
    assert_eq!(claimed.len(), 5);
    // The third job's lease expires and another worker takes it over.
    let stale = &claimed[2];
    expire_lease(&pool, stale.id).await;
    store.reap(10).await.unwrap();
    let successor = claim_one(&store, "w2").await;
    assert_eq!(successor.id, stale.id);

    let outcomes: Vec<_> = claimed
        .iter()
        .map(|c| (c.lease, done(&format!("out-{}", c.id))))
        .collect();
    let results = store.complete_many(&outcomes).await.unwrap();
    assert_eq!(results.len(), 5);
    for (c, result) in claimed.iter().zip(&results) {
        if c.id == stale.id {
            assert!(
                matches!(result, Err(StoreError::LeaseLost { job_id }) if *job_id == c.id),
                "{result:?}"
            );
        } else {
            assert!(result.is_ok(), "{result:?}");
            let job = store.get(None, c.id).await.unwrap().unwrap();
            assert_eq!(job.state, JobState::Completed);
            assert_eq!(job.output.unwrap(), format!("out-{}", c.id).into_bytes());
            let attempts = store.attempts(None, c.id).await.unwrap();
            assert_eq!(attempts[0].outcome, Some(AttemptOutcome::Completed));
            assert_eq!(attempts[0].fuel_used, Some(7));
        }
    }
    // The successor still holds its job, untouched by the stale outcome.
    let job = store.get(None, stale.id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Running);
    assert_eq!(job.output, None);
    store
        .complete(&successor.lease, &done("fresh"))
        .await
        .unwrap();
    assert!(store.complete_many(&[]).await.unwrap().is_empty());
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn next_due_in_reports_the_earliest_pending_job(pool: PgPool) {
    let store = setup(&pool).await;
    assert_eq!(
        store.next_due_in(None).await.unwrap(),
        None,
        "nothing pending"
    );
    store
        .enqueue(&job("later").with_run_at(RunAt::Delay(Duration::from_secs(60))))
        .await
        .unwrap();
    let due = store
        .next_due_in(None)
        .await
        .unwrap()
        .expect("one pending job");
    assert!(
        due > Duration::from_secs(55) && due <= Duration::from_secs(60),
        "{due:?}"
    );
    let other = [OTHER_TENANT.to_owned()];
    assert_eq!(
        store.next_due_in(Some(&other)).await.unwrap(),
        None,
        "scoped by tenant"
    );
    store.enqueue(&job("now")).await.unwrap();
    assert_eq!(store.next_due_in(None).await.unwrap(), Some(Duration::ZERO));
    assert_eq!(store.count_pending(Some(TENANT)).await.unwrap(), 2);
    assert_eq!(store.count_pending(Some(OTHER_TENANT)).await.unwrap(), 0);
    claim_one(&store, "w").await;
    assert_eq!(store.count_pending(None).await.unwrap(), 1);
}
