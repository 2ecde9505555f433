//! Batched completion and failure keep fencing, and the depth queries an idle worker
//! sleeps on.

use std::time::Duration;

use sluice_store::{
    AttemptOutcome, Completion, FailResult, Failure, JobState, NewJob, RunAt, StoreError,
};
use sqlx::PgPool;

use crate::common::*;

fn done(output: &str) -> Completion {
    Completion {
        output: output.as_bytes().to_vec(),
        fuel_used: Some(7),
        follow_ups: Vec::new(),
        log: None,
    }
}

/// `items` in an order that is neither theirs nor its reverse: the batched statements
/// bind their arrays sorted by id, and results must still come back in input order.
fn scrambled<T>(mut items: Vec<T>) -> Vec<T> {
    items.reverse();
    let mid = items.len() / 2;
    items.rotate_left(mid);
    items
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
    let stale = claimed[2].id;
    expire_lease(&pool, stale).await;
    store.reap(10).await.unwrap();
    let successor = claim_one(&store, "w2").await;
    assert_eq!(successor.id, stale);

    // Given out of id order: each outcome must still land on its own job.
    let claimed = scrambled(claimed);
    let outcomes: Vec<_> = claimed
        .iter()
        .map(|c| (c.lease, done(&format!("out-{}", c.id))))
        .collect();
    let results = store.complete_many(&outcomes).await.unwrap();
    assert_eq!(results.len(), 5);
    for (c, result) in claimed.iter().zip(&results) {
        if c.id == stale {
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
    let job = store.get(None, stale).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Running);
    assert_eq!(job.output, None);
    store
        .complete(&successor.lease, &done("fresh"))
        .await
        .unwrap();
    assert!(store.complete_many(&[]).await.unwrap().is_empty());
}

/// One failure batch holding every way a failure ends, plus a stale lease: each live job
/// goes where its own failure sends it, with its own error and fuel in its history; the
/// stale one is reported lost and its successor's attempt is untouched.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_failure_batch_moves_each_live_job_its_own_way_and_drops_the_stale_one(pool: PgPool) {
    let store = setup(&pool).await;
    let retry = store.enqueue(&job("retry")).await.unwrap().id;
    let fatal = store.enqueue(&job("fatal")).await.unwrap().id;
    let last = store
        .enqueue(&NewJob::new(TENANT, ONCE, &b"once"[..]))
        .await
        .unwrap()
        .id;
    let cancel = store.enqueue(&job("cancel")).await.unwrap().id;
    let stale = store.enqueue(&job("stale")).await.unwrap().id;
    let claimed = store.claim(&claim_req("w1", 5)).await.unwrap();
    assert_eq!(claimed.len(), 5);
    store.cancel(None, cancel).await.unwrap();
    expire_lease(&pool, stale).await;
    store.reap(10).await.unwrap();
    let successor = claim_one(&store, "w2").await;
    assert_eq!(successor.id, stale);

    let before = db_now(&pool).await;
    let claimed = scrambled(claimed);
    let failures: Vec<_> = claimed
        .iter()
        .map(|c| {
            let mut failure = if c.id == fatal {
                Failure::fatal(format!("fatal-{}", c.id))
            } else {
                Failure::retry(format!("error-{}", c.id))
            };
            failure.backoff.base = Duration::from_secs(60);
            failure.backoff.jitter = 0.0;
            failure.fuel_used = Some(c.id * 10);
            (c.lease, failure)
        })
        .collect();
    let results = store.fail_many(&failures).await.unwrap();
    assert_eq!(results.len(), 5);
    for (c, result) in claimed.iter().zip(&results) {
        match c.id {
            id if id == retry => {
                let Ok(FailResult::Retrying { run_at }) = result else {
                    panic!("{result:?}")
                };
                let delay = (*run_at - before).num_seconds();
                assert!((59..=61).contains(&delay), "retry in {delay}s");
            }
            id if id == fatal || id == last => {
                assert_eq!(result.as_ref().ok(), Some(&FailResult::Dead))
            }
            id if id == cancel => assert_eq!(result.as_ref().ok(), Some(&FailResult::Cancelled)),
            _ => assert!(
                matches!(result, Err(StoreError::LeaseLost { job_id }) if *job_id == stale),
                "{result:?}"
            ),
        }
    }
    for (id, state, outcome) in [
        (retry, JobState::Pending, AttemptOutcome::Retry),
        (fatal, JobState::Dead, AttemptOutcome::Dead),
        (last, JobState::Dead, AttemptOutcome::Dead),
        (cancel, JobState::Cancelled, AttemptOutcome::Cancelled),
    ] {
        let row = store.get(None, id).await.unwrap().unwrap();
        assert_eq!(row.state, state, "job {id}");
        let expected_error = if id == fatal {
            format!("fatal-{id}")
        } else {
            format!("error-{id}")
        };
        assert_eq!(row.last_error.as_deref(), Some(expected_error.as_str()));
        let attempts = store.attempts(None, id).await.unwrap();
        assert_eq!(attempts.len(), 1, "job {id}");
        assert_eq!(attempts[0].outcome, Some(outcome), "job {id}");
        assert_eq!(attempts[0].error.as_deref(), Some(expected_error.as_str()));
        assert_eq!(attempts[0].fuel_used, Some(id * 10));
    }
    // The successor still holds its job: running, its attempt open, and the error is still
    // the reaper's, not the stale holder's.
    let row = store.get(None, stale).await.unwrap().unwrap();
    assert_eq!(row.state, JobState::Running);
    let error = row.last_error.unwrap();
    assert!(error.starts_with("lease expired"), "{error}");
    let attempts = store.attempts(None, stale).await.unwrap();
    assert_eq!(attempts.last().unwrap().outcome, None);
    store
        .complete(&successor.lease, &done("fresh"))
        .await
        .unwrap();
    assert!(store.fail_many(&[]).await.unwrap().is_empty());
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
