//! Test 8: cancel and retry transitions, illegal ones refused with typed errors; and
//! reading jobs (tenant scoping, keyset listing).

use std::time::Duration;

use sluice_store::{
    AttemptOutcome, CancelResult, Completion, FailResult, Failure, JobFilter, JobState, NewJob,
    StoreError,
};
use sqlx::PgPool;

use crate::common::*;

fn illegal(r: Result<impl std::fmt::Debug, StoreError>, want: JobState) {
    match r {
        Err(StoreError::IllegalTransition { state, .. }) if state == want => {}
        other => panic!("expected IllegalTransition from {want}, got {other:?}"),
    }
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn cancel_pending_then_retry(pool: PgPool) {
    let store = setup(&pool).await;
    let id = store.enqueue(&job("p")).await.unwrap().id;
    assert_eq!(
        store.cancel(Some(TENANT), id).await.unwrap(),
        CancelResult::Cancelled
    );
    let j = store.get(None, id).await.unwrap().unwrap();
    assert_eq!(j.state, JobState::Cancelled);
    assert!(j.finished_at.is_some());
    assert!(store.claim(&claim_req("w", 10)).await.unwrap().is_empty());

    illegal(store.cancel(None, id).await, JobState::Cancelled);

    store.retry(Some(TENANT), id).await.unwrap();
    let j = store.get(None, id).await.unwrap().unwrap();
    assert_eq!((j.state, j.attempt), (JobState::Pending, 0));
    assert!(j.finished_at.is_none());
    illegal(store.retry(None, id).await, JobState::Pending);
    let c = claim_one(&store, "w").await;
    assert_eq!(c.id, id);
    illegal(store.retry(None, id).await, JobState::Running);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn cancel_running_is_requested_then_marked_by_the_worker(pool: PgPool) {
    let store = setup(&pool).await;
    let id = store.enqueue(&job("p")).await.unwrap().id;
    let c = claim_one(&store, "w").await;
    assert_eq!(
        store.cancel(None, id).await.unwrap(),
        CancelResult::CancelRequested
    );
    // Asking twice is fine.
    assert_eq!(
        store.cancel(None, id).await.unwrap(),
        CancelResult::CancelRequested
    );
    let j = store.get(None, id).await.unwrap().unwrap();
    assert_eq!(j.state, JobState::Running);
    assert!(j.cancel_requested);

    let hb = store
        .heartbeat("w", &[c.lease], Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(hb.cancel_requested, vec![id]);
    assert!(hb.lost.is_empty());

    assert_eq!(
        store
            .mark_cancelled(&c.lease, "cancelled by operator after 1.2 s", None)
            .await
            .unwrap(),
        AttemptOutcome::Cancelled
    );
    let j = store.get(None, id).await.unwrap().unwrap();
    assert_eq!(j.state, JobState::Cancelled);
    assert!(!j.cancel_requested && j.finished_at.is_some() && j.locked_by.is_none());
    assert_eq!(
        j.last_error.as_deref(),
        Some("cancelled by operator after 1.2 s")
    );
    let a = store.attempts(None, id).await.unwrap();
    assert_eq!(a[0].outcome, Some(AttemptOutcome::Cancelled));

    // Completing a cancelled job: the lease is gone.
    let err = store
        .complete(&c.lease, &Completion::default())
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::LeaseLost { .. }), "{err}");
    assert_eq!(
        store.get(None, id).await.unwrap().unwrap().state,
        JobState::Cancelled
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn cancel_requested_job_is_not_retried_or_requeued(pool: PgPool) {
    let store = setup(&pool).await;
    let a = store.enqueue(&job("a")).await.unwrap().id;
    let b = store.enqueue(&job("b")).await.unwrap().id;
    let ca = claim_one(&store, "w").await;
    let cb = claim_one(&store, "w").await;
    store.cancel(None, a).await.unwrap();
    store.cancel(None, b).await.unwrap();
    // A failure with attempts left would retry; with a cancel pending it cancels.
    assert_eq!(
        store
            .fail(&ca.lease, &Failure::retry("interrupted"))
            .await
            .unwrap(),
        FailResult::Cancelled
    );
    // Released (e.g. shutdown) with a cancel pending: cancelled, not back to pending,
    // and the release says so.
    assert_eq!(
        store.release(&cb.lease, "shutdown").await.unwrap(),
        AttemptOutcome::Cancelled
    );
    for id in [a, b] {
        let j = store.get(None, id).await.unwrap().unwrap();
        assert_eq!(j.state, JobState::Cancelled);
        assert!(!j.cancel_requested);
    }
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn terminal_and_foreign_jobs_are_refused(pool: PgPool) {
    let store = setup(&pool).await;
    let id = jobs(&store).worker("w").completed(job("p")).await;
    illegal(store.retry(None, id).await, JobState::Completed);
    illegal(store.cancel(None, id).await, JobState::Completed);

    // Another tenant's job does not exist for them.
    let err = store.cancel(Some(OTHER_TENANT), id).await.unwrap_err();
    assert!(
        matches!(err, StoreError::NotFound { entity: "job", .. }),
        "{err}"
    );
    let err = store.retry(Some(OTHER_TENANT), id).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err}");
    assert!(store.get(Some(OTHER_TENANT), id).await.unwrap().is_none());
    assert!(store.get(Some(TENANT), id).await.unwrap().is_some());
    let err = store.cancel(None, 999_999).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err}");
    assert_eq!(
        store.get(None, id).await.unwrap().unwrap().state,
        JobState::Completed
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn retry_dead_brings_back_dead_jobs(pool: PgPool) {
    let store = setup(&pool).await;
    let jobs = vec![
        job("a").with_max_attempts(1),
        job("b").with_max_attempts(1),
        NewJob::new(TENANT, ONCE, "c"),
        NewJob::new(OTHER_TENANT, JOB, "d").with_max_attempts(1),
    ];
    let ids: Vec<i64> = store
        .enqueue_many(&jobs)
        .await
        .unwrap()
        .iter()
        .map(|e| e.id)
        .collect();
    for c in store.claim(&claim_req("w", 10)).await.unwrap() {
        assert_eq!(
            store.fail(&c.lease, &Failure::retry("x")).await.unwrap(),
            FailResult::Dead
        );
    }
    assert_eq!(store.retry_dead(Some(TENANT), Some(JOB)).await.unwrap(), 2);
    assert_eq!(
        store.get(None, ids[0]).await.unwrap().unwrap().state,
        JobState::Pending
    );
    assert_eq!(
        store.get(None, ids[2]).await.unwrap().unwrap().state,
        JobState::Dead
    );
    assert_eq!(store.retry_dead(None, None).await.unwrap(), 2);
    assert_eq!(store.retry_dead(None, None).await.unwrap(), 0);
    let pending: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM sluice.jobs WHERE state = 'pending' AND attempt = 0",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(pending, 4);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn list_pages_newest_first_with_filters(pool: PgPool) {
    let store = setup(&pool).await;
    let mut jobs: Vec<NewJob> = (0..25).map(|i| job(&i.to_string())).collect();
    jobs.push(NewJob::new(OTHER_TENANT, JOB, "other"));
    jobs.push(NewJob::new(TENANT, ONCE, "once"));
    let ids: Vec<i64> = store
        .enqueue_many(&jobs)
        .await
        .unwrap()
        .iter()
        .map(|e| e.id)
        .collect();

    let mut seen = Vec::new();
    let mut filter = JobFilter {
        tenant: Some(TENANT.into()),
        job_type: Some(JOB.into()),
        state: Some(JobState::Pending),
        limit: 10,
        ..JobFilter::default()
    };
    loop {
        let page = store.list(&filter).await.unwrap();
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 10);
        filter.after = Some(page.last().unwrap().id);
        seen.extend(page.iter().map(|j| j.id));
    }
    let mut expected = ids[..25].to_vec();
    expected.reverse();
    assert_eq!(seen, expected);

    let all = store
        .list(&JobFilter {
            limit: 100,
            ..JobFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(all.len(), 27);
    assert_eq!(all[0].payload_size, 4); // "once"
    let other = store
        .list(&JobFilter {
            tenant: Some(OTHER_TENANT.into()),
            ..JobFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(other.len(), 1);
    let dead = store
        .list(&JobFilter {
            state: Some(JobState::Dead),
            ..JobFilter::default()
        })
        .await
        .unwrap();
    assert!(dead.is_empty());
    let err = store
        .list(&JobFilter {
            limit: 0,
            ..JobFilter::default()
        })
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        StoreError::InvalidInput { field: "limit", .. }
    ));
}
