//! Follow-up jobs: the children a completion carries are inserted in its transaction,
//! exist only if it was written, are made once however often it is written, and a child
//! that cannot be inserted refuses only its own parent's completion.

use sluice_store::{Completion, JobFilter, JobState, KeyScope, Lease, NewJob, RunAt, StoreError};
use sqlx::PgPool;

use crate::common::*;

fn child(n: u32) -> NewJob {
    NewJob::new(TENANT, ONCE, format!(r#"{{"n":{n}}}"#).into_bytes())
}

fn with_children(children: Vec<NewJob>) -> Completion {
    Completion {
        output: b"parent done".to_vec(),
        fuel_used: Some(1),
        follow_ups: children,
        log: None,
    }
}

async fn children_of(store: &sluice_store::Store, parent: i64) -> Vec<sluice_store::JobSummary> {
    store
        .list(&JobFilter {
            tenant: Some(TENANT.into()),
            parent: Some(parent),
            ..JobFilter::default()
        })
        .await
        .unwrap()
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_completion_inserts_its_children_in_order_with_their_parent(pool: PgPool) {
    let store = setup(&pool).await;
    let parent = jobs(&store).running(job("fan out")).await;
    let mut delayed = child(2).with_run_at(RunAt::Delay(std::time::Duration::from_secs(600)));
    delayed.priority = 30;
    store
        .complete(
            &parent.lease,
            &with_children(vec![child(0), child(1), delayed]),
        )
        .await
        .unwrap();

    let record = store.get(Some(TENANT), parent.id).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Completed);
    assert_eq!(record.children_count, 3);
    assert_eq!(record.children.len(), 3);
    assert!(
        record.children.windows(2).all(|w| w[0] < w[1]),
        "in the order asked"
    );
    for (n, id) in record.children.iter().enumerate() {
        let kid = store.get(Some(TENANT), *id).await.unwrap().unwrap();
        assert_eq!(kid.parent_id, Some(parent.id));
        assert_eq!((kid.tenant.as_str(), kid.job_type.as_str()), (TENANT, ONCE));
        assert_eq!(kid.state, JobState::Pending);
        assert_eq!(kid.payload, format!(r#"{{"n":{n}}}"#).into_bytes());
        assert_eq!(kid.max_attempts, 1, "the type's attempts");
    }
    let last = store.get(None, record.children[2]).await.unwrap().unwrap();
    assert_eq!(last.priority, 30);
    assert!(last.run_at > chrono::Utc::now() + chrono::Duration::seconds(500));
    let listed = children_of(&store, parent.id).await;
    assert_eq!(listed.len(), 3);
    assert!(listed.iter().all(|j| j.parent_id == Some(parent.id)));
    // Another tenant's listing of the same parent finds nothing.
    let theirs = store
        .list(&JobFilter {
            tenant: Some(OTHER_TENANT.into()),
            parent: Some(parent.id),
            ..JobFilter::default()
        })
        .await
        .unwrap();
    assert!(theirs.is_empty());
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_replayed_or_stale_completion_creates_no_child(pool: PgPool) {
    let store = setup(&pool).await;
    let parent = jobs(&store).running(job("fan out")).await;
    let done = with_children(vec![child(0), child(1)]);
    store.complete(&parent.lease, &done).await.unwrap();
    // The same completion written again (its reply was lost): refused, nothing added.
    let again = store.complete(&parent.lease, &done).await;
    assert!(
        matches!(again, Err(StoreError::LeaseLost { .. })),
        "{again:?}"
    );
    assert_eq!(children_of(&store, parent.id).await.len(), 2);

    // A holder whose lease is stale (another token) makes nothing.
    let other = jobs(&store).running(job("second")).await;
    let stale = Lease {
        job_id: other.id,
        token: uuid::Uuid::new_v4(),
    };
    let lost = store.complete(&stale, &done).await;
    assert!(
        matches!(lost, Err(StoreError::LeaseLost { .. })),
        "{lost:?}"
    );
    assert!(children_of(&store, other.id).await.is_empty());
    let still = store.get(None, other.id).await.unwrap().unwrap();
    assert_eq!(still.state, JobState::Running);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_child_that_cannot_be_inserted_refuses_only_its_parent(pool: PgPool) {
    let store = setup(&pool).await;
    let bad = jobs(&store).running(job("bad")).await;
    let good = jobs(&store).running(job("good")).await;
    let too_big = jobs(&store).running(job("big")).await;
    let gone = NewJob::new(TENANT, "deleted-meanwhile", b"{}".to_vec());
    let huge = NewJob::new(TENANT, ONCE, vec![b'x'; 2 << 20]);
    let results = store
        .complete_many(&[
            (bad.lease, with_children(vec![child(0), gone])),
            (good.lease, with_children(vec![child(7)])),
            (too_big.lease, with_children(vec![huge])),
        ])
        .await
        .unwrap();
    match &results[0] {
        Err(StoreError::FollowUpRefused { job_id, message }) => {
            assert_eq!(*job_id, bad.id);
            assert!(message.contains("deleted-meanwhile"), "{message}");
        }
        other => panic!("expected FollowUpRefused, got {other:?}"),
    }
    assert!(results[1].is_ok(), "{:?}", results[1]);
    match &results[2] {
        Err(StoreError::FollowUpRefused { message, .. }) => {
            assert!(message.contains("limit"), "{message}");
        }
        other => panic!("expected FollowUpRefused, got {other:?}"),
    }
    // Refused parents are still running under their leases, with no child; the other
    // completed with its own.
    for refused in [&bad, &too_big] {
        let job = store.get(None, refused.id).await.unwrap().unwrap();
        assert_eq!(job.state, JobState::Running);
        assert!(children_of(&store, refused.id).await.is_empty());
    }
    assert_eq!(children_of(&store, good.id).await.len(), 1);
    let fail = store
        .fail(
            &bad.lease,
            &sluice_store::Failure::retry("follow-ups refused"),
        )
        .await;
    assert!(fail.is_ok(), "the lease still holds: {fail:?}");
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_child_whose_key_is_taken_is_not_created_and_its_parent_completes(pool: PgPool) {
    let store = setup(&pool).await;
    let holder = store
        .enqueue(&child(0).with_idempotency_key("receipt-42", KeyScope::Retained))
        .await
        .unwrap()
        .id;
    let parent = jobs(&store).running(job("p")).await;
    let keyed = child(1).with_idempotency_key("receipt-42", KeyScope::Retained);
    store
        .complete(&parent.lease, &with_children(vec![keyed, child(2)]))
        .await
        .unwrap();
    let kids = children_of(&store, parent.id).await;
    assert_eq!(kids.len(), 1, "only the keyless child is new");
    assert_ne!(kids[0].id, holder);
    let record = store.get(None, parent.id).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Completed);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn ten_thousand_children_of_one_completion_are_inserted(pool: PgPool) {
    let store = setup(&pool).await;
    let parent = jobs(&store).running(job("newsletter")).await;
    let kids: Vec<NewJob> = (0..10_000).map(child).collect();
    store
        .complete(&parent.lease, &with_children(kids))
        .await
        .unwrap();
    let record = store.get(None, parent.id).await.unwrap().unwrap();
    assert_eq!(record.children_count, 10_000);
    assert_eq!(record.children.len(), sluice_store::MAX_CHILDREN_SHOWN);
}
