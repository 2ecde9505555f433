//! Durable suspension (issue #43): a run that suspends gives its attempt back and holds
//! nothing; a stale lease writes nothing; snoozes are counted and bounded; the follow-up
//! jobs of a suspension are created once however often a replayed run asks again; a
//! waiting job is cancelled at once, counted as waiting, keeps an `unfinished` key taken
//! and is never pruned. Signals and the waker are in `signals.rs`.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sluice_store::{
    CancelResult, ClaimedJob, JobState, KeyScope, Lease, NewJob, Parent, RetentionPolicy, Store,
    StoreError, Suspended, Suspension, Wake,
};
use sqlx::PgPool;

use crate::common::*;

pub fn suspension(wake: Wake) -> Suspension {
    Suspension {
        wake,
        follow_ups: Vec::new(),
        log: None,
        fuel_used: Some(7),
        reason: "test".into(),
    }
}

pub fn signal(name: &str) -> Wake {
    Wake::Signal {
        name: name.into(),
        deadline: None,
    }
}

/// (outcome, error) of the job's archived attempts, oldest first.
pub async fn history(pool: &PgPool, id: i64) -> Vec<(String, Option<String>)> {
    sqlx::query_as(
        "SELECT outcome, error FROM sluice.attempt_history WHERE job_id = $1 ORDER BY id",
    )
    .bind(id)
    .fetch_all(pool)
    .await
    .unwrap()
}

/// A running job of `send-email` (3 attempts), suspended with `wake`.
pub async fn waiting(store: &Store, wake: Wake) -> ClaimedJob {
    let claimed = jobs(store).running(job("wait")).await;
    let went = store
        .suspend(&claimed.lease, &suspension(wake))
        .await
        .unwrap();
    assert_eq!(went, Suspended::Waiting);
    claimed
}

async fn claimable(store: &Store) -> usize {
    store.claim(&claim_req("w", 10)).await.unwrap().len()
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_suspended_job_waits_without_lease_or_attempt_and_resumes_with_the_same_attempt(
    pool: PgPool,
) {
    let store = setup(&pool).await;
    let now = db_now(&pool).await;
    let until = now + chrono::Duration::hours(1);
    let claimed = jobs(&store).running(job("sleeper")).await;
    let mut sleep = suspension(Wake::At(until));
    sleep.reason = "sleep until in an hour".into();
    assert_eq!(
        store.suspend(&claimed.lease, &sleep).await.unwrap(),
        Suspended::Waiting
    );

    let record = store.get(Some(TENANT), claimed.id).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Waiting);
    assert_eq!(record.attempt, 0, "the attempt is given back");
    assert_eq!(record.locked_by, None);
    assert_eq!(record.locked_until, None);
    assert_eq!(record.finished_at, None);
    assert_eq!(record.run_at, until);
    assert_eq!((record.waiting_for, record.awaited), (None, None));
    assert_eq!(
        history(&pool, claimed.id).await,
        [("suspended".into(), Some("sleep until in an hour".into()))]
    );
    let fuel: Option<i64> =
        sqlx::query_scalar("SELECT fuel_used FROM sluice.attempt_history WHERE job_id = $1")
            .bind(claimed.id)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(fuel, Some(7));
    assert_eq!(claimable(&store).await, 0, "a waiting job is not claimable");

    // Its time comes: the waker makes it pending at its instant, then it is claimed with
    // the same attempt number under a new lease.
    assert_eq!(store.wake_waiting(Duration::ZERO, 100).await.unwrap(), 0);
    sqlx::query("UPDATE sluice.jobs SET run_at = now() - interval '1 second' WHERE id = $1")
        .bind(claimed.id)
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(store.wake_waiting(Duration::ZERO, 100).await.unwrap(), 1);
    let again = claim_one(&store, "w2").await;
    assert_eq!((again.id, again.attempt), (claimed.id, 1));
    assert_ne!(again.lease.token, claimed.lease.token);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_stale_lease_suspends_nothing(pool: PgPool) {
    let store = setup(&pool).await;
    let claimed = jobs(&store).running(job("stale")).await;
    let stale = Lease {
        job_id: claimed.id,
        token: uuid::Uuid::new_v4(),
    };
    let mut with_child = suspension(signal("approve"));
    with_child.follow_ups = vec![child(claimed.id, 0)];
    let err = store.suspend(&stale, &with_child).await.unwrap_err();
    assert!(matches!(err, StoreError::LeaseLost { job_id } if job_id == claimed.id));

    let record = store.get(None, claimed.id).await.unwrap().unwrap();
    assert_eq!((record.state, record.attempt), (JobState::Running, 1));
    assert!(history(&pool, claimed.id).await.is_empty());
    assert_eq!(count_jobs(&pool).await, 1, "no follow-up job was inserted");
    // The real lease still suspends.
    assert_eq!(
        store
            .suspend(&claimed.lease, &suspension(signal("approve")))
            .await
            .unwrap(),
        Suspended::Waiting
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_cancel_requested_while_running_makes_the_suspension_cancel(pool: PgPool) {
    let store = setup(&pool).await;
    let claimed = jobs(&store).running(job("doomed")).await;
    assert_eq!(
        store.cancel(None, claimed.id).await.unwrap(),
        CancelResult::CancelRequested
    );
    let mut with_child = suspension(signal("approve"));
    with_child.follow_ups = vec![child(claimed.id, 0)];
    assert_eq!(
        store.suspend(&claimed.lease, &with_child).await.unwrap(),
        Suspended::Cancelled
    );
    let record = store.get(None, claimed.id).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Cancelled);
    assert_eq!(record.waiting_for, None);
    assert!(record.finished_at.is_some());
    assert_eq!(history(&pool, claimed.id).await[0].0, "cancelled");
    assert_eq!(
        count_jobs(&pool).await,
        1,
        "a cancelled job's follow-ups are dropped"
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_waiting_job_is_cancelled_at_once(pool: PgPool) {
    let store = setup(&pool).await;
    let claimed = waiting(&store, signal("approve")).await;
    assert!(matches!(
        store.cancel(Some(OTHER_TENANT), claimed.id).await,
        Err(StoreError::NotFound { .. })
    ));
    assert_eq!(
        store.cancel(Some(TENANT), claimed.id).await.unwrap(),
        CancelResult::Cancelled
    );
    let record = store.get(None, claimed.id).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Cancelled);
    assert_eq!(record.waiting_for, None);
    assert!(record.finished_at.is_some());
    // It never runs again: a signal is refused, the waker leaves it.
    let err = store
        .send_signal(Some(TENANT), claimed.id, "approve", None)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::IllegalTransition {
                state: JobState::Cancelled,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        store
            .wake_waiting(Duration::from_secs(1 << 40), 100)
            .await
            .unwrap(),
        0
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn snoozes_are_counted_and_the_one_past_the_limit_writes_nothing(pool: PgPool) {
    let store = setup(&pool).await;
    let snooze = || {
        suspension(Wake::Snooze {
            delay: Duration::from_secs(60),
            max_snoozes: 2,
        })
    };
    let mut claimed = jobs(&store).running(job("busy api")).await;
    for n in 1..=2 {
        let before = db_now(&pool).await;
        assert_eq!(
            store.suspend(&claimed.lease, &snooze()).await.unwrap(),
            Suspended::Pending
        );
        let record = store.get(None, claimed.id).await.unwrap().unwrap();
        assert_eq!(
            (record.state, record.snoozes, record.attempt),
            (JobState::Pending, n, 0)
        );
        assert!(record.run_at >= before + chrono::Duration::seconds(60));
        assert_eq!(claimable(&store).await, 0, "snoozed for a minute");
        make_due(&pool, claimed.id).await;
        claimed = claim_one(&store, "w").await;
        assert_eq!(claimed.attempt, 1, "a snooze spends no attempt");
    }
    assert_eq!(
        store.suspend(&claimed.lease, &snooze()).await.unwrap(),
        Suspended::SnoozeLimit { limit: 2 }
    );
    let record = store.get(None, claimed.id).await.unwrap().unwrap();
    assert_eq!((record.state, record.snoozes), (JobState::Running, 2));
    assert_eq!(
        history(&pool, claimed.id).await.len(),
        2,
        "nothing archived"
    );
    // Still held: the caller fails the attempt.
    store
        .fail(
            &claimed.lease,
            &sluice_store::Failure::retry("snoozed 2 times"),
        )
        .await
        .unwrap();
}

fn child(parent: i64, seq: i32) -> NewJob {
    let mut child = NewJob::new(TENANT, ONCE, format!(r#"{{"seq":{seq}}}"#).into_bytes());
    child.parent = Some(Parent { id: parent, seq });
    child
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_suspensions_follow_ups_are_created_once_across_replays(pool: PgPool) {
    let store = setup(&pool).await;
    let claimed = jobs(&store).running(job("fan out")).await;
    let mut first = suspension(signal("go"));
    first.follow_ups = vec![child(claimed.id, 0), child(claimed.id, 1)];
    assert_eq!(
        store.suspend(&claimed.lease, &first).await.unwrap(),
        Suspended::Waiting
    );
    let record = store.get(None, claimed.id).await.unwrap().unwrap();
    assert_eq!(record.children_count, 2);

    // Woken, claimed again; the replayed run buffers the same two calls and a new one.
    assert!(
        store
            .send_signal(None, claimed.id, "go", None)
            .await
            .unwrap()
    );
    let again = store
        .claim(&sluice_store::ClaimRequest {
            job_types: Some(vec![JOB.into()]),
            ..claim_req("w", 1)
        })
        .await
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!(again.id, claimed.id);
    let taken = store
        .take_signal(again.id, again.lease.token, "go", 2)
        .await;
    assert!(
        taken.unwrap().is_some(),
        "the replayed await takes its signal"
    );
    let mut second = suspension(signal("go"));
    second.follow_ups = vec![child(again.id, 0), child(again.id, 1), child(again.id, 2)];
    assert_eq!(
        store.suspend(&again.lease, &second).await.unwrap(),
        Suspended::Waiting
    );
    let record = store.get(None, claimed.id).await.unwrap().unwrap();
    assert_eq!(record.children_count, 3, "only the new call made a job");
    assert_eq!(record.children, {
        let mut ids = record.children.clone();
        ids.sort_unstable();
        ids
    });

    // A follow-up that does not name this job as its parent is refused, nothing written.
    let mut orphan = suspension(signal("go"));
    orphan.follow_ups = vec![NewJob::new(TENANT, ONCE, b"{}".to_vec())];
    assert!(matches!(
        store.suspend(&again.lease, &orphan).await,
        Err(StoreError::InvalidInput {
            field: "follow_ups.parent",
            ..
        })
    ));
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_follow_up_of_an_unknown_type_refuses_the_suspension(pool: PgPool) {
    let store = setup(&pool).await;
    let claimed = jobs(&store).running(job("bad child")).await;
    let mut bad = suspension(signal("go"));
    let mut kid = child(claimed.id, 0);
    kid.job_type = "no-such-type".into();
    bad.follow_ups = vec![kid];
    let err = store.suspend(&claimed.lease, &bad).await.unwrap_err();
    assert!(matches!(err, StoreError::FollowUpRefused { job_id, .. } if job_id == claimed.id));
    let record = store.get(None, claimed.id).await.unwrap().unwrap();
    assert_eq!(
        record.state,
        JobState::Running,
        "still held: fail the attempt"
    );
    assert!(history(&pool, claimed.id).await.is_empty());
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_waiting_job_counts_as_waiting_keeps_its_unfinished_key_and_is_never_pruned(
    pool: PgPool,
) {
    let store = setup(&pool).await;
    let keyed = job("keyed").with_idempotency_key("digest-7", KeyScope::Unfinished);
    let claimed = jobs(&store).running(keyed.clone()).await;
    store
        .suspend(&claimed.lease, &suspension(signal("approve")))
        .await
        .unwrap();

    let stats = store.stats(Some(TENANT)).await.unwrap();
    assert_eq!((stats.totals.waiting, stats.totals.running), (1, 0));
    assert_eq!(stats.totals.get(JobState::Waiting), 1);
    let listed = store
        .list(&sluice_store::JobFilter {
            tenant: Some(TENANT.into()),
            state: Some(JobState::Waiting),
            ..sluice_store::JobFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(
        listed.iter().map(|j| j.id).collect::<Vec<_>>(),
        [claimed.id]
    );

    let again = store.enqueue(&keyed).await.unwrap();
    assert_eq!(
        (again.id, again.created),
        (claimed.id, false),
        "the key is still taken"
    );

    // Old as it may be, a waiting job is not finished: retention leaves it.
    sqlx::query(
        "UPDATE sluice.jobs SET created_at = now() - interval '1 year', \
         updated_at = now() - interval '1 year' WHERE id = $1",
    )
    .bind(claimed.id)
    .execute(&pool)
    .await
    .unwrap();
    let report = store
        .prune(&RetentionPolicy {
            completed: Duration::ZERO,
            dead: Duration::ZERO,
            batch_size: 100,
        })
        .await
        .unwrap();
    assert_eq!(report.deleted, 0);
    assert_eq!(count_jobs(&pool).await, 1);
}

/// The instant a waiting job wakes by itself when only a signal or its children can.
pub fn never() -> DateTime<Utc> {
    sluice_store::RUN_AT_MAX
}
