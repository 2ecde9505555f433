//! Follow-up jobs whose idempotency key names a job already (issue #43, migration 0029):
//! the id `jobs.enqueue` reserved for one stands for the job holding the key. The parent
//! awaits it under that id, reads its outcome, is woken when it finishes (by the waker:
//! the holder is no child of it), and a replaying run does not insert it again; retention
//! keeps the holder while the parent is unfinished.

use std::time::Duration;

use sluice_store::{Completion, JobState, KeyScope, NewJob, Parent, Suspended, Wake};
use sqlx::PgPool;

use crate::common::*;
use crate::waits::suspension;

fn child(parent: i64, seq: i32, id: i64, key: Option<&str>) -> NewJob {
    let mut child = NewJob::new(TENANT, ONCE, format!(r#"{{"seq":{seq}}}"#).into_bytes());
    child.parent = Some(Parent { id: parent, seq });
    child.id = Some(id);
    if let Some(key) = key {
        child = child.with_idempotency_key(key, KeyScope::Retained);
    }
    child
}

async fn aliases(pool: &PgPool) -> Vec<(i64, i64, i32, i64)> {
    sqlx::query_as(
        "SELECT id, parent_id, parent_seq, job_id FROM sluice.follow_up_aliases ORDER BY id",
    )
    .fetch_all(pool)
    .await
    .unwrap()
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_follow_up_folded_onto_a_keyed_job_is_awaited_under_its_reserved_id(pool: PgPool) {
    let store = setup(&pool).await;
    let parent = jobs(&store).running(job("fan in")).await;
    let holder = jobs(&store)
        .pending(job("holder").with_idempotency_key("once", KeyScope::Retained))
        .await;
    let ids = store.reserve_job_ids(2).await.unwrap();
    let follow_ups = || {
        vec![
            child(parent.id, 0, ids[0], Some("once")),
            child(parent.id, 1, ids[1], None),
        ]
    };
    let mut fan_out = suspension(Wake::Jobs { ids: ids.clone() });
    fan_out.follow_ups = follow_ups();
    assert_eq!(
        store.suspend(&parent.lease, &fan_out).await.unwrap(),
        Suspended::Waiting,
        "the holder and the new child are pending"
    );
    assert_eq!(store.get(None, ids[0]).await.unwrap(), None, "not inserted");
    assert_eq!(aliases(&pool).await, [(ids[0], parent.id, 0, holder)]);
    let outcomes = store.child_outcomes(parent.id, &ids).await.unwrap();
    assert_eq!(
        outcomes.iter().map(|o| (o.id, o.state)).collect::<Vec<_>>(),
        [(ids[0], JobState::Pending), (ids[1], JobState::Pending)],
        "the holder is reported under the reserved id"
    );

    let claimed = store.claim(&claim_req("w", 5)).await.unwrap();
    let lease_of = |id: i64| &claimed.iter().find(|c| c.id == id).unwrap().lease;
    let state = |id| {
        let store = &store;
        async move { store.get(None, id).await.unwrap().unwrap().state }
    };
    store
        .complete(lease_of(ids[1]), &Completion::default())
        .await
        .unwrap();
    assert_eq!(
        state(parent.id).await,
        JobState::Waiting,
        "its own child finished, the holder runs: the trigger leaves it waiting"
    );
    assert_eq!(store.wake_waiting(Duration::ZERO, 10).await.unwrap(), 0);
    let done = Completion {
        output: b"held".to_vec(),
        ..Completion::default()
    };
    store.complete(lease_of(holder), &done).await.unwrap();
    assert_eq!(
        store.wake_waiting(Duration::ZERO, 10).await.unwrap(),
        1,
        "the waker wakes it once the holder has finished"
    );
    assert_eq!(state(parent.id).await, JobState::Pending);
    let outcomes = store.child_outcomes(parent.id, &ids[..1]).await.unwrap();
    assert_eq!(outcomes[0].id, ids[0]);
    assert_eq!(outcomes[0].state, JobState::Completed);
    assert_eq!(outcomes[0].output.as_deref(), Some(&b"held"[..]));

    // The resumed run replays: nothing is inserted again, and it is ready at once.
    let before = count_jobs(&pool).await;
    let resumed = claim_one(&store, "w").await;
    assert_eq!(resumed.id, parent.id);
    let mut replay = suspension(Wake::Jobs { ids: ids.clone() });
    replay.follow_ups = follow_ups();
    assert_eq!(
        store.suspend(&resumed.lease, &replay).await.unwrap(),
        Suspended::Pending
    );
    assert_eq!(count_jobs(&pool).await, before);
    assert_eq!(aliases(&pool).await.len(), 1);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_second_follow_up_with_the_same_key_in_one_run_stands_for_the_first(pool: PgPool) {
    let store = setup(&pool).await;
    let parent = jobs(&store).running(job("fan in")).await;
    let ids = store.reserve_job_ids(2).await.unwrap();
    let mut fan_out = suspension(Wake::Jobs { ids: ids.clone() });
    fan_out.follow_ups = vec![
        child(parent.id, 0, ids[0], Some("same")),
        child(parent.id, 1, ids[1], Some("same")),
    ];
    assert_eq!(
        store.suspend(&parent.lease, &fan_out).await.unwrap(),
        Suspended::Waiting
    );
    assert!(store.get(None, ids[0]).await.unwrap().is_some());
    assert_eq!(aliases(&pool).await, [(ids[1], parent.id, 1, ids[0])]);
    let kid = claim_one(&store, "kid").await;
    assert_eq!(kid.id, ids[0]);
    store
        .complete(&kid.lease, &Completion::default())
        .await
        .unwrap();
    let woken = store.get(None, parent.id).await.unwrap().unwrap();
    assert_eq!(
        woken.state,
        JobState::Pending,
        "its child was the job both ids stand for: the trigger wakes it"
    );
    let outcomes = store.child_outcomes(parent.id, &ids).await.unwrap();
    assert_eq!(
        outcomes.iter().map(|o| (o.id, o.state)).collect::<Vec<_>>(),
        [(ids[0], JobState::Completed), (ids[1], JobState::Completed)]
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn retention_keeps_the_job_an_unfinished_parent_awaits_by_alias(pool: PgPool) {
    let store = setup(&pool).await;
    let parent = jobs(&store).running(job("fan in")).await;
    let holder = jobs(&store)
        .completed(job("holder").with_idempotency_key("once", KeyScope::Retained))
        .await;
    finished_ago(&pool, &[holder], "40 days").await;
    let ids = store.reserve_job_ids(1).await.unwrap();
    let mut fan_out = suspension(Wake::Snooze {
        delay: Duration::from_secs(60),
        max_snoozes: 25,
    });
    fan_out.follow_ups = vec![child(parent.id, 0, ids[0], Some("once"))];
    store.suspend(&parent.lease, &fan_out).await.unwrap();

    let policy = sluice_store::RetentionPolicy::default();
    let report = store.prune(&policy).await.unwrap();
    assert_eq!(
        report.deleted, 0,
        "the parent still needs the holder's outcome"
    );

    // Once the parent has finished, the holder goes, and the alias with the parent.
    store.cancel(None, parent.id).await.unwrap();
    finished_ago(&pool, &[parent.id], "40 days").await;
    let report = store.prune(&policy).await.unwrap();
    assert_eq!(report.deleted, 2);
    assert!(aliases(&pool).await.is_empty());
}
