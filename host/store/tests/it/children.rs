//! Follow-up jobs of durable jobs (issue #43): ids reserved before the job exists, jobs
//! inserted under them (by an enqueue, a completion or a suspension, once), the last
//! awaited child to finish waking its parent, and the outcomes of awaited children, read
//! only through their parent.

use std::time::Duration;

use sluice_store::{
    Completion, Failure, JobState, KeyScope, NewJob, Parent, StoreError, Suspended, Wake,
};
use sqlx::PgPool;

use crate::common::*;
use crate::waits::suspension;

fn child(parent: i64, seq: i32, id: i64) -> NewJob {
    let mut child = NewJob::new(TENANT, ONCE, format!(r#"{{"seq":{seq}}}"#).into_bytes());
    child.parent = Some(Parent { id: parent, seq });
    child.id = Some(id);
    child
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn reserved_ids_are_fresh_and_a_job_is_inserted_under_one_once(pool: PgPool) {
    let store = setup(&pool).await;
    let ids = store.reserve_job_ids(3).await.unwrap();
    assert_eq!(ids.len(), 3);
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    assert!(store.reserve_job_ids(0).await.unwrap().is_empty());
    assert!(matches!(
        store
            .reserve_job_ids(sluice_store::MAX_RESERVED_IDS + 1)
            .await,
        Err(StoreError::InvalidInput { field: "n", .. })
    ));

    let mut reserved = job("reserved").with_concurrency_key("k");
    reserved.id = Some(ids[1]);
    let plain = job("plain");
    let out = store
        .enqueue_many(&[plain.clone(), reserved.clone()])
        .await
        .unwrap();
    assert_eq!(out[1].id, ids[1]);
    assert!(out[1].created);
    assert!(out[0].id > ids[2], "a drawn id is never a reserved one");
    let record = store.get(None, ids[1]).await.unwrap().unwrap();
    assert_eq!(record.concurrency_key.as_deref(), Some("k"));
    assert_eq!(
        store.get(None, ids[0]).await.unwrap(),
        None,
        "reserved, unused"
    );

    // The same id again is refused as a whole: nothing of the batch is written.
    let before = count_jobs(&pool).await;
    assert!(store.enqueue_many(&[plain, reserved]).await.is_err());
    assert_eq!(count_jobs(&pool).await, before);
    let mut bad = job("bad");
    bad.id = Some(0);
    assert!(matches!(
        store.enqueue(&bad).await,
        Err(StoreError::InvalidInput { field: "id", .. })
    ));
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_reserved_id_whose_key_is_taken_stands_for_the_holder(pool: PgPool) {
    let store = setup(&pool).await;
    let holder = jobs(&store)
        .pending(job("first").with_idempotency_key("once", KeyScope::Retained))
        .await;
    let id = store.reserve_job_ids(1).await.unwrap()[0];
    let mut again = job("second").with_idempotency_key("once", KeyScope::Retained);
    again.id = Some(id);
    let out = store.enqueue(&again).await.unwrap();
    assert_eq!((out.id, out.created), (holder, false));
    assert_eq!(store.get(None, id).await.unwrap(), None);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_parent_awaits_its_reserved_children_and_reads_their_outcomes(pool: PgPool) {
    let store = setup(&pool).await;
    let parent = jobs(&store).running(job("fan in")).await;
    let ids = store.reserve_job_ids(2).await.unwrap();
    let mut fan_out = suspension(Wake::Jobs { ids: ids.clone() });
    fan_out.follow_ups = vec![child(parent.id, 0, ids[0]), child(parent.id, 1, ids[1])];
    assert_eq!(
        store.suspend(&parent.lease, &fan_out).await.unwrap(),
        Suspended::Waiting
    );
    let record = store.get(None, parent.id).await.unwrap().unwrap();
    assert_eq!(record.awaited, Some(ids.clone()));
    assert_eq!(record.children, ids);

    let stranger = jobs(&store).completed(job("not a child")).await;
    let outcomes = store
        .child_outcomes(parent.id, &[ids[1], stranger, ids[0], ids[1]])
        .await
        .unwrap();
    assert_eq!(
        outcomes.iter().map(|o| (o.id, o.state)).collect::<Vec<_>>(),
        [(ids[1], JobState::Pending), (ids[0], JobState::Pending)],
        "in the order asked, each once, children only"
    );

    // The children run; the last one to finish wakes the parent (jobs_wake_parent).
    let kids = store.claim(&claim_req("kid", 2)).await.unwrap();
    let kid = |id| kids.iter().find(|k| k.id == id).unwrap();
    let done = Completion {
        output: b"42".to_vec(),
        ..Completion::default()
    };
    let state = |id| {
        let store = &store;
        async move { store.get(None, id).await.unwrap().unwrap().state }
    };
    store.complete(&kid(ids[0]).lease, &done).await.unwrap();
    assert_eq!(
        state(parent.id).await,
        JobState::Waiting,
        "one child still runs"
    );
    assert_eq!(store.wake_waiting(Duration::ZERO, 10).await.unwrap(), 0);
    store
        .fail(&kid(ids[1]).lease, &Failure::fatal("no luck"))
        .await
        .unwrap();
    assert_eq!(
        state(parent.id).await,
        JobState::Pending,
        "woken by its last child"
    );
    assert_eq!(store.wake_waiting(Duration::ZERO, 10).await.unwrap(), 0);
    let outcomes = store.child_outcomes(parent.id, &ids).await.unwrap();
    assert_eq!(outcomes[0].state, JobState::Completed);
    assert_eq!(outcomes[0].output.as_deref(), Some(&b"42"[..]));
    assert_eq!(outcomes[0].error, None);
    assert_eq!(outcomes[1].state, JobState::Dead);
    assert_eq!(outcomes[1].output, None);
    assert_eq!(outcomes[1].error.as_deref(), Some("no luck"));

    // The resumed run replays: the same children again make nothing, and no error.
    let resumed = claim_one(&store, "w").await;
    assert_eq!(resumed.id, parent.id);
    let mut replay = suspension(Wake::Jobs { ids: ids.clone() });
    replay.follow_ups = vec![child(parent.id, 0, ids[0]), child(parent.id, 1, ids[1])];
    assert_eq!(
        store.suspend(&resumed.lease, &replay).await.unwrap(),
        Suspended::Pending,
        "they are all finished"
    );
    let record = store.get(None, parent.id).await.unwrap().unwrap();
    assert_eq!(record.children_count, 2);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_cancelled_or_reaped_child_wakes_its_parent_too(pool: PgPool) {
    let store = setup(&pool).await;
    let parent = jobs(&store).running(job("fan in")).await;
    let ids = store.reserve_job_ids(2).await.unwrap();
    let mut fan_out = suspension(Wake::Jobs { ids: ids.clone() });
    fan_out.follow_ups = vec![child(parent.id, 0, ids[0]), child(parent.id, 1, ids[1])];
    store.suspend(&parent.lease, &fan_out).await.unwrap();

    // One child is cancelled before it runs; the other runs out its one attempt's lease.
    store.cancel(None, ids[0]).await.unwrap();
    let kid = claim_one(&store, "kid").await;
    assert_eq!(kid.id, ids[1]);
    let waiting = store.get(None, parent.id).await.unwrap().unwrap();
    assert_eq!(waiting.state, JobState::Waiting);
    expire_lease(&pool, kid.id).await;
    let reaped = store.reap(10).await.unwrap();
    assert_eq!(reaped[0].state, JobState::Dead);
    let woken = store.get(None, parent.id).await.unwrap().unwrap();
    assert_eq!((woken.state, woken.awaited), (JobState::Pending, None));
    assert!(woken.run_at <= db_now(&pool).await);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn retention_keeps_the_children_of_an_unfinished_parent(pool: PgPool) {
    let store = setup(&pool).await;
    let parent = jobs(&store).running(job("fan in")).await;
    let ids = store.reserve_job_ids(2).await.unwrap();
    let mut fan_out = suspension(Wake::Jobs { ids: ids.clone() });
    fan_out.follow_ups = vec![child(parent.id, 0, ids[0]), child(parent.id, 1, ids[1])];
    store.suspend(&parent.lease, &fan_out).await.unwrap();
    let kid = claim_one(&store, "kid").await;
    store
        .complete(&kid.lease, &Completion::default())
        .await
        .unwrap();
    finished_ago(&pool, &[kid.id], "40 days").await;
    let unrelated = jobs(&store).completed(job("unrelated")).await;
    finished_ago(&pool, &[unrelated], "40 days").await;

    let policy = sluice_store::RetentionPolicy::default();
    let report = store.prune(&policy).await.unwrap();
    assert_eq!(report.deleted, 1, "only the job without a waiting parent");
    assert!(store.get(None, kid.id).await.unwrap().is_some());

    // Once the parent has finished, its old children go.
    store.cancel(None, parent.id).await.unwrap();
    let report = store.prune(&policy).await.unwrap();
    assert_eq!(report.deleted, 1);
    assert!(store.get(None, kid.id).await.unwrap().is_none());
}
