//! Expired leases: the reaper takes jobs back, and a stale holder can change nothing.

use std::time::Duration;

use sluice_store::{AttemptOutcome, Completion, Failure, JobState, NewJob, StoreError};
use sqlx::PgPool;

use crate::common::*;

/// Test 6: an expired lease goes back to pending, or dead on the last attempt, with an
/// error naming the expiry and the worker.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn reaper_takes_back_expired_leases(pool: PgPool) {
    let store = setup(&pool).await;
    let id = store
        .enqueue(&job("p").with_max_attempts(2))
        .await
        .unwrap()
        .id;
    let healthy = store.enqueue(&job("q")).await.unwrap().id;

    let c = claim_one(&store, "worker-7").await;
    assert_eq!(c.id, id);
    let other = claim_one(&store, "worker-8").await;
    assert_eq!(other.id, healthy);
    assert!(
        store.reap(100).await.unwrap().is_empty(),
        "nothing expired yet"
    );

    expire_lease(&pool, id).await;
    let reaped = store.reap(100).await.unwrap();
    assert_eq!(reaped.len(), 1, "only the expired one");
    let r = &reaped[0];
    assert_eq!(
        (r.id, r.state, r.attempt, r.max_attempts),
        (id, JobState::Pending, 1, 2)
    );
    assert_eq!(r.worker, "worker-7");
    assert!(
        r.error
            .starts_with("lease expired (held by worker-7 until 20"),
        "{}",
        r.error
    );
    assert!(r.error.ends_with("on attempt 1 of 2"), "{}", r.error);
    let j = store.get(None, id).await.unwrap().unwrap();
    assert_eq!(
        (j.state, j.attempt),
        (JobState::Pending, 1),
        "the attempt is used"
    );
    assert_eq!(j.last_error.as_ref(), Some(&r.error));
    assert!(j.locked_by.is_none() && j.finished_at.is_none());
    assert_eq!(
        store.get(None, healthy).await.unwrap().unwrap().state,
        JobState::Running
    );

    // Last attempt expires too: dead.
    let c = claim_one(&store, "worker-9").await;
    assert_eq!((c.id, c.attempt), (id, 2));
    expire_lease(&pool, id).await;
    let reaped = store.reap(100).await.unwrap();
    assert_eq!(reaped.len(), 1);
    assert_eq!(reaped[0].state, JobState::Dead);
    let j = store.get(None, id).await.unwrap().unwrap();
    assert_eq!(j.state, JobState::Dead);
    assert!(j.finished_at.is_some());
    let err = j.last_error.unwrap();
    assert!(
        err.contains("lease expired") && err.contains("worker-9"),
        "{err}"
    );

    let a = store.attempts(None, id).await.unwrap();
    assert_eq!(a.len(), 2);
    assert!(
        a.iter()
            .all(|a| a.outcome == Some(AttemptOutcome::LeaseExpired))
    );
    assert_eq!(a[0].worker, "worker-7");
    assert!(a[0].error.as_deref().unwrap().contains("worker-7"));
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn reap_is_bounded(pool: PgPool) {
    let store = setup(&pool).await;
    let jobs: Vec<NewJob> = (0..5).map(|i| job(&i.to_string())).collect();
    store.enqueue_many(&jobs).await.unwrap();
    store.claim(&claim_req("w", 5)).await.unwrap();
    sqlx::query("UPDATE sluice.jobs SET locked_until = now() - interval '1 minute'")
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(store.reap(2).await.unwrap().len(), 2);
    assert_eq!(store.reap(100).await.unwrap().len(), 3);
    assert!(store.reap(100).await.unwrap().is_empty());
}

/// Test 5: after its lease expired and the job was reaped and claimed again, the first
/// holder's complete, fail, release, cancel and heartbeat change nothing and report the
/// lease lost; the second holder's complete works.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn stale_lease_holder_cannot_change_anything(pool: PgPool) {
    let store = setup(&pool).await;
    let id = store.enqueue(&job("p")).await.unwrap().id;
    let first = claim_one(&store, "slow").await;
    expire_lease(&pool, id).await;
    assert_eq!(store.reap(10).await.unwrap().len(), 1);
    let second = claim_one(&store, "fast").await;
    assert_eq!(second.id, id);
    assert_eq!(second.attempt, 2);
    assert_ne!(first.lease.token, second.lease.token);

    let snapshot = store.get(None, id).await.unwrap().unwrap();
    let lost = |r: Result<(), StoreError>| {
        assert!(
            matches!(r, Err(StoreError::LeaseLost { job_id }) if job_id == id),
            "{r:?}"
        )
    };
    lost(
        store
            .complete(
                &first.lease,
                &Completion {
                    output: b"stale".to_vec(),
                    fuel_used: None,
                    follow_ups: Vec::new(),
                    log: None,
                },
            )
            .await,
    );
    lost(
        store
            .fail(&first.lease, &Failure::fatal("stale"))
            .await
            .map(|_| ()),
    );
    lost(store.release(&first.lease, "stale").await.map(|_| ()));
    lost(
        store
            .mark_cancelled(&first.lease, "stale", None)
            .await
            .map(|_| ()),
    );
    let hb = store
        .heartbeat("slow", &[first.lease], Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(hb.lost, vec![id]);
    assert_eq!(
        store.get(None, id).await.unwrap().unwrap(),
        snapshot,
        "nothing changed"
    );

    store
        .complete(
            &second.lease,
            &Completion {
                output: b"ok".to_vec(),
                fuel_used: None,
                follow_ups: Vec::new(),
                log: None,
            },
        )
        .await
        .unwrap();
    let j = store.get(None, id).await.unwrap().unwrap();
    assert_eq!(j.state, JobState::Completed);
    assert_eq!(j.output.as_deref(), Some(&b"ok"[..]));
    // And the stale holder still cannot touch the finished job.
    lost(store.complete(&first.lease, &Completion::default()).await);

    let a = store.attempts(None, id).await.unwrap();
    let outcomes: Vec<_> = a.iter().map(|a| (a.worker.as_str(), a.outcome)).collect();
    assert_eq!(
        outcomes,
        vec![
            ("slow", Some(AttemptOutcome::LeaseExpired)),
            ("fast", Some(AttemptOutcome::Completed))
        ]
    );
}

/// A lease that expired but was not reaped yet is still the only lease: its holder may
/// still heartbeat and finish (nobody else can have the job).
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn expired_but_unreaped_lease_can_still_finish(pool: PgPool) {
    let store = setup(&pool).await;
    let id = store.enqueue(&job("p")).await.unwrap().id;
    let c = claim_one(&store, "w").await;
    expire_lease(&pool, id).await;
    let hb = store
        .heartbeat("w", &[c.lease], Duration::from_secs(60))
        .await
        .unwrap();
    assert!(hb.lost.is_empty());
    assert!(
        store.reap(10).await.unwrap().is_empty(),
        "heartbeat renewed it"
    );
    store
        .complete(&c.lease, &Completion::default())
        .await
        .unwrap();
}
