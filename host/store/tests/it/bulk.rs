//! The dashboard's bulk actions: retry, cancel and delete by ids (one guarded statement
//! each, one tenant only, the single-job state rules) and by search (keyset batches).

use std::time::Duration;

use sluice_store::{
    BulkAction, BulkOutcome, JobSearch, JobState, KeyScope, NewJob, Notice, Store, StoreError,
};
use sqlx::PgPool;

use crate::common::*;

async fn state(store: &Store, id: i64) -> Option<JobState> {
    store.get(None, id).await.unwrap().map(|j| j.state)
}

fn outcome(matched: i64, changed: i64) -> BulkOutcome {
    BulkOutcome { matched, changed }
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn bulk_retry_takes_dead_and_cancelled_jobs_of_the_tenant_only(pool: PgPool) {
    let store = setup(&pool).await;
    let f = jobs(&store);
    let dead = f.dead(job("d"), "boom").await;
    let completed = f.completed(job("c")).await;
    let other_dead = f.dead(NewJob::new(OTHER_TENANT, JOB, "o"), "boom").await;
    let cancelled = f.cancelled(job("x")).await;
    let pending = f.pending(job("p")).await;
    let mut listener = store.listen().await.unwrap();

    let ids = [dead, completed, other_dead, cancelled, pending, 999_999];
    let got = store
        .bulk_jobs(TENANT, BulkAction::Retry, &ids)
        .await
        .unwrap();
    assert_eq!(got, outcome(4, 2));
    for id in [dead, cancelled] {
        let j = store.get(None, id).await.unwrap().unwrap();
        assert_eq!((j.state, j.attempt), (JobState::Pending, 0));
        assert!(j.finished_at.is_none());
    }
    assert_eq!(state(&store, completed).await, Some(JobState::Completed));
    assert_eq!(state(&store, other_dead).await, Some(JobState::Dead));
    let notice = tokio::time::timeout(Duration::from_secs(10), listener.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(notice, Notice::JobsAvailable);
    // Nothing left to retry.
    assert_eq!(
        store
            .bulk_jobs(TENANT, BulkAction::Retry, &ids)
            .await
            .unwrap(),
        outcome(4, 0)
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn bulk_retry_skips_a_job_whose_key_is_taken_without_failing_the_batch(pool: PgPool) {
    let store = setup(&pool).await;
    let f = jobs(&store);
    let keyed = job("k").with_idempotency_key("digest", KeyScope::Unfinished);
    let blocked = f.dead(keyed.clone(), "boom").await;
    let free = f.dead(job("free"), "boom").await;
    // The key is free again once the job died: another job takes it.
    let holder = f.pending(keyed).await;
    let got = store
        .bulk_jobs(TENANT, BulkAction::Retry, &[blocked, free])
        .await
        .unwrap();
    assert_eq!(got, outcome(2, 1));
    assert_eq!(state(&store, blocked).await, Some(JobState::Dead));
    assert_eq!(state(&store, free).await, Some(JobState::Pending));
    assert_eq!(state(&store, holder).await, Some(JobState::Pending));
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn bulk_cancel_cancels_pending_and_asks_running_workers(pool: PgPool) {
    let store = setup(&pool).await;
    let f = jobs(&store);
    let running = f.running(job("r")).await.id;
    let completed = f.completed(NewJob::new(TENANT, ONCE, "c")).await;
    let pending = f.pending(job("p")).await;
    let other = f.pending(NewJob::new(OTHER_TENANT, JOB, "o")).await;
    let mut listener = store.listen().await.unwrap();

    let got = store
        .bulk_jobs(
            TENANT,
            BulkAction::Cancel,
            &[running, completed, pending, other],
        )
        .await
        .unwrap();
    assert_eq!(got, outcome(3, 2));
    let p = store.get(None, pending).await.unwrap().unwrap();
    assert_eq!(p.state, JobState::Cancelled);
    assert_eq!(p.last_error.as_deref(), Some("cancelled by operator"));
    assert!(p.finished_at.is_some());
    let r = store.get(None, running).await.unwrap().unwrap();
    assert_eq!((r.state, r.cancel_requested), (JobState::Running, true));
    assert_eq!(state(&store, completed).await, Some(JobState::Completed));
    assert_eq!(state(&store, other).await, Some(JobState::Pending));
    let notice = tokio::time::timeout(Duration::from_secs(10), listener.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(notice, Notice::CancelRequested(running));
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn bulk_delete_never_removes_a_running_job(pool: PgPool) {
    let store = setup(&pool).await;
    let f = jobs(&store);
    let running = f.running(job("r")).await.id;
    let dead = f.dead(NewJob::new(TENANT, ONCE, "d"), "boom").await;
    let completed = f.completed(NewJob::new(TENANT, ONCE, "c")).await;
    let pending = f.pending(job("p")).await;
    let other = f.dead(NewJob::new(OTHER_TENANT, ONCE, "o"), "boom").await;

    let ids = [running, dead, completed, pending, other];
    let got = store
        .bulk_jobs(TENANT, BulkAction::Delete, &ids)
        .await
        .unwrap();
    assert_eq!(got, outcome(4, 3));
    for id in [dead, completed, pending] {
        assert_eq!(state(&store, id).await, None, "job {id} deleted");
    }
    assert_eq!(state(&store, running).await, Some(JobState::Running));
    assert_eq!(state(&store, other).await, Some(JobState::Dead));
    let history: i64 =
        sqlx::query_scalar("SELECT count(*) FROM sluice.attempt_history WHERE job_id = ANY($1)")
            .bind(&[dead, completed][..])
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(history, 0, "the attempt history goes with its job");
    assert_eq!(
        store
            .bulk_jobs(TENANT, BulkAction::Delete, &ids)
            .await
            .unwrap(),
        outcome(1, 0)
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn more_than_a_thousand_ids_are_refused(pool: PgPool) {
    let store = setup(&pool).await;
    let id = jobs(&store).pending(job("p")).await;
    let ids: Vec<i64> = std::iter::repeat_n(id, 1001).collect();
    match store.bulk_jobs(TENANT, BulkAction::Cancel, &ids).await {
        Err(StoreError::InvalidInput {
            field: "ids",
            message,
        }) => {
            assert!(message.contains("1000"), "{message}")
        }
        other => panic!("expected the limit named, got {other:?}"),
    }
    assert_eq!(state(&store, id).await, Some(JobState::Pending));
    assert_eq!(
        store
            .bulk_jobs(TENANT, BulkAction::Cancel, &[])
            .await
            .unwrap(),
        outcome(0, 0)
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn bulk_matching_works_through_every_match_in_batches(pool: PgPool) {
    let store = setup(&pool).await;
    let many: Vec<NewJob> = (0..1203).map(|i| job(&format!("{{\"n\":{i}}}"))).collect();
    store.enqueue_many(&many).await.unwrap();
    let others: Vec<NewJob> = (0..5)
        .map(|_| NewJob::new(OTHER_TENANT, JOB, "{}"))
        .collect();
    store.enqueue_many(&others).await.unwrap();
    let running = jobs(&store)
        .running(NewJob::new(TENANT, ONCE, "{}"))
        .await
        .id;

    let pending = JobSearch {
        tenant: TENANT.into(),
        states: vec![JobState::Pending],
        ..JobSearch::default()
    };
    assert_eq!(store.count_jobs(&pending).await.unwrap(), 1203);
    let got = store
        .bulk_matching(&pending, BulkAction::Cancel)
        .await
        .unwrap();
    assert_eq!(got, outcome(1203, 1203));
    assert_eq!(store.count_jobs(&pending).await.unwrap(), 0);

    let cancelled = JobSearch {
        states: vec![JobState::Cancelled],
        ..pending.clone()
    };
    // A payload filter narrows the action: {"n":7} only.
    let seventh = JobSearch {
        payload_contains: Some(serde_json::json!({"n": 7})),
        ..cancelled.clone()
    };
    assert_eq!(
        store
            .bulk_matching(&seventh, BulkAction::Retry)
            .await
            .unwrap(),
        outcome(1, 1)
    );
    // Any state: retry touches the cancelled ones, and visits each job once even though
    // retried jobs still match.
    let everything = JobSearch {
        tenant: TENANT.into(),
        ..JobSearch::default()
    };
    assert_eq!(
        store
            .bulk_matching(&everything, BulkAction::Retry)
            .await
            .unwrap(),
        outcome(1204, 1202)
    );
    assert_eq!(
        store
            .bulk_matching(&everything, BulkAction::Delete)
            .await
            .unwrap(),
        outcome(1204, 1203)
    );
    assert_eq!(state(&store, running).await, Some(JobState::Running));
    let globex = JobSearch {
        tenant: OTHER_TENANT.into(),
        states: vec![JobState::Pending],
        ..JobSearch::default()
    };
    assert_eq!(store.count_jobs(&globex).await.unwrap(), 5);
}
