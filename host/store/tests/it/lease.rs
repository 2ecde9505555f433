//! The lease holder's transitions: complete, fail (retry/dead/fatal), release,
//! heartbeat, and the attempt history they write.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sluice_store::{
    AttemptOutcome, Backoff, Completion, FailResult, Failure, JobState, NewJob, StoreError,
};
use sqlx::PgPool;

use crate::common::*;

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn complete_stores_output_and_finishes_the_attempt(pool: PgPool) {
    let store = setup(&pool).await;
    let id = store.enqueue(&job("p")).await.unwrap().id;
    let c = claim_one(&store, "worker-1").await;
    store
        .complete(
            &c.lease,
            &Completion {
                output: b"sent".to_vec(),
                fuel_used: Some(1234),
                follow_ups: Vec::new(),
                log: None,
            },
        )
        .await
        .unwrap();
    let j = store.get(None, id).await.unwrap().unwrap();
    assert_eq!(j.state, JobState::Completed);
    assert_eq!(j.output.as_deref(), Some(&b"sent"[..]));
    assert!(j.finished_at.is_some());
    assert!(j.locked_by.is_none() && j.locked_until.is_none());
    let a = store.attempts(None, id).await.unwrap();
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].attempt, 1);
    assert_eq!(a[0].worker, "worker-1");
    assert_eq!(a[0].outcome, Some(AttemptOutcome::Completed));
    assert_eq!(a[0].fuel_used, Some(1234));
    assert!(a[0].finished_at.is_some());
    // Twice is a lost lease, not a second completion.
    let err = store
        .complete(&c.lease, &Completion::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::LeaseLost { job_id } if job_id == id),
        "{err}"
    );
}

fn backoff(base_s: u64) -> Backoff {
    Backoff {
        base: Duration::from_secs(base_s),
        cap: Duration::from_secs(3600),
        jitter: 0.2,
    }
}

/// run_at must be within `[before + d·(1-j), after + d·(1+j)]`, from database time.
fn assert_in_window(run_at: DateTime<Utc>, before: DateTime<Utc>, after: DateTime<Utc>, d: f64) {
    let lo = before + chrono::Duration::milliseconds((d * 0.8 * 1000.0) as i64);
    let hi = after + chrono::Duration::milliseconds((d * 1.2 * 1000.0) as i64);
    assert!(
        run_at >= lo && run_at <= hi,
        "run_at {run_at} not in [{lo}, {hi}]"
    );
}

/// Test 4: retries back off exponentially with jitter, keep last_error, and end dead.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn failures_retry_with_backoff_then_die(pool: PgPool) {
    let store = setup(&pool).await;
    let id = store.enqueue(&job("p")).await.unwrap().id;

    // Attempt 1 fails: pending, run_at ≈ now + 10 s ± 20 %.
    let c = claim_one(&store, "w").await;
    let before = db_now(&pool).await;
    let mut f = Failure::retry("smtp timeout");
    f.backoff = backoff(10);
    f.fuel_used = Some(7);
    let r = store.fail(&c.lease, &f).await.unwrap();
    let after = db_now(&pool).await;
    let FailResult::Retrying { run_at } = r else {
        panic!("{r:?}")
    };
    assert_in_window(run_at, before, after, 10.0);
    let j = store.get(None, id).await.unwrap().unwrap();
    assert_eq!(j.state, JobState::Pending);
    assert_eq!(j.attempt, 1, "the attempt is kept");
    assert_eq!(j.run_at, run_at);
    assert_eq!(j.last_error.as_deref(), Some("smtp timeout"));
    assert!(j.finished_at.is_none() && j.locked_by.is_none());
    // Not due yet.
    assert!(store.claim(&claim_req("w", 1)).await.unwrap().is_empty());

    // Attempt 2 fails: the delay doubles (20 s ± 20 %).
    make_due(&pool, id).await;
    let c = claim_one(&store, "w").await;
    assert_eq!(c.attempt, 2);
    let before = db_now(&pool).await;
    let mut f = Failure::retry("smtp 451");
    f.backoff = backoff(10);
    let FailResult::Retrying { run_at } = store.fail(&c.lease, &f).await.unwrap() else {
        panic!()
    };
    let after = db_now(&pool).await;
    assert_in_window(run_at, before, after, 20.0);

    // Attempt 3 (the last) fails: dead, last_error kept.
    make_due(&pool, id).await;
    let c = claim_one(&store, "w").await;
    assert_eq!(c.attempt, 3);
    let r = store
        .fail(&c.lease, &Failure::retry("smtp 550"))
        .await
        .unwrap();
    assert_eq!(r, FailResult::Dead);
    let j = store.get(None, id).await.unwrap().unwrap();
    assert_eq!(j.state, JobState::Dead);
    assert_eq!(j.attempt, 3);
    assert_eq!(j.last_error.as_deref(), Some("smtp 550"));
    assert!(j.finished_at.is_some());

    // The history: retry, retry, dead, with their errors.
    let a = store.attempts(Some(TENANT), id).await.unwrap();
    let summary: Vec<_> = a
        .iter()
        .map(|a| (a.attempt, a.outcome, a.error.as_deref()))
        .collect();
    assert_eq!(
        summary,
        vec![
            (1, Some(AttemptOutcome::Retry), Some("smtp timeout")),
            (2, Some(AttemptOutcome::Retry), Some("smtp 451")),
            (3, Some(AttemptOutcome::Dead), Some("smtp 550")),
        ]
    );
    assert_eq!(a[0].fuel_used, Some(7));
    assert!(a.iter().all(|a| a.finished_at.is_some() && a.worker == "w"));
    assert!(
        store
            .attempts(Some(OTHER_TENANT), id)
            .await
            .unwrap()
            .is_empty()
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn backoff_is_capped(pool: PgPool) {
    let store = setup(&pool).await;
    let id = store
        .enqueue(&job("p").with_max_attempts(10))
        .await
        .unwrap()
        .id;
    for _ in 0..4 {
        make_due(&pool, id).await;
        let c = claim_one(&store, "w").await;
        store.fail(&c.lease, &Failure::retry("e")).await.unwrap();
    }
    make_due(&pool, id).await;
    let c = claim_one(&store, "w").await;
    assert_eq!(c.attempt, 5);
    // base 1 s · 2^4 = 16 s, capped at 5 s, no jitter: exactly now + 5 s.
    let mut f = Failure::retry("e");
    f.backoff = Backoff {
        base: Duration::from_secs(1),
        cap: Duration::from_secs(5),
        jitter: 0.0,
    };
    let FailResult::Retrying { run_at } = store.fail(&c.lease, &f).await.unwrap() else {
        panic!()
    };
    let updated_at = store.get(None, id).await.unwrap().unwrap().updated_at;
    assert_eq!(run_at - updated_at, chrono::Duration::seconds(5));

    let mut f = Failure::retry("e");
    f.backoff.jitter = 1.5;
    let err = store.fail(&c.lease, &f).await.unwrap_err();
    assert!(matches!(err, StoreError::InvalidInput { .. }));
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn fatal_failure_is_dead_at_once(pool: PgPool) {
    let store = setup(&pool).await;
    let id = store.enqueue(&job("p")).await.unwrap().id;
    let c = claim_one(&store, "w").await;
    let r = store
        .fail(&c.lease, &Failure::fatal("invalid address"))
        .await
        .unwrap();
    assert_eq!(r, FailResult::Dead);
    let j = store.get(None, id).await.unwrap().unwrap();
    assert_eq!((j.state, j.attempt), (JobState::Dead, 1));
    assert_eq!(j.last_error.as_deref(), Some("invalid address"));
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn single_attempt_job_dies_on_first_failure(pool: PgPool) {
    let store = setup(&pool).await;
    let a = store
        .enqueue(&NewJob::new(TENANT, ONCE, "p"))
        .await
        .unwrap()
        .id;
    let b = store
        .enqueue(&job("p").with_max_attempts(1))
        .await
        .unwrap()
        .id;
    for id in [a, b] {
        let c = claim_one(&store, "w").await;
        assert_eq!(c.id, id);
        assert_eq!((c.attempt, c.max_attempts), (1, 1));
        let r = store.fail(&c.lease, &Failure::retry("nope")).await.unwrap();
        assert_eq!(r, FailResult::Dead);
    }
}

/// Test 7: release gives the job back without using an attempt.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn release_returns_to_pending_without_using_an_attempt(pool: PgPool) {
    let store = setup(&pool).await;
    let id = store
        .enqueue(&NewJob::new(TENANT, ONCE, "p"))
        .await
        .unwrap()
        .id;
    let run_at = store.get(None, id).await.unwrap().unwrap().run_at;
    let c = claim_one(&store, "w").await;
    assert_eq!(c.attempt, 1);
    assert_eq!(
        store.release(&c.lease, "host shutting down").await.unwrap(),
        AttemptOutcome::Released
    );
    let j = store.get(None, id).await.unwrap().unwrap();
    assert_eq!((j.state, j.attempt), (JobState::Pending, 0));
    assert_eq!(j.run_at, run_at, "keeps its place in the queue");
    assert!(j.locked_by.is_none() && j.finished_at.is_none() && j.last_error.is_none());

    // Released twice, still the first attempt of a single-attempt job.
    let c = claim_one(&store, "w2").await;
    assert_eq!(c.attempt, 1);
    store
        .release(&c.lease, "database unreachable")
        .await
        .unwrap();
    let c = claim_one(&store, "w3").await;
    assert_eq!(c.attempt, 1);
    store
        .complete(&c.lease, &Completion::default())
        .await
        .unwrap();

    let a = store.attempts(None, id).await.unwrap();
    let summary: Vec<_> = a
        .iter()
        .map(|a| (a.attempt, a.worker.as_str(), a.outcome, a.error.as_deref()))
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                1,
                "w",
                Some(AttemptOutcome::Released),
                Some("host shutting down")
            ),
            (
                1,
                "w2",
                Some(AttemptOutcome::Released),
                Some("database unreachable")
            ),
            (1, "w3", Some(AttemptOutcome::Completed), None),
        ]
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn heartbeat_extends_held_leases_in_one_call(pool: PgPool) {
    let store = setup(&pool).await;
    store
        .enqueue_many(&[job("a"), job("b"), job("c")])
        .await
        .unwrap();
    let claimed = store.claim(&claim_req("w", 3)).await.unwrap();
    // Out of id order (b, c, a): the statement binds them sorted.
    let leases: Vec<_> = [1, 2, 0].map(|i| claimed[i].lease).to_vec();
    // Job b's lease has nearly run out; job c was taken over by someone else.
    sqlx::query("UPDATE sluice.jobs SET locked_until = now() + interval '1 second' WHERE id = $1")
        .bind(claimed[1].id)
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("UPDATE sluice.jobs SET lease_token = gen_random_uuid() WHERE id = $1")
        .bind(claimed[2].id)
        .execute(&pool)
        .await
        .unwrap();
    let report = store
        .heartbeat("w", &leases, Duration::from_secs(120))
        .await
        .unwrap();
    assert_eq!(report.lost, vec![claimed[2].id]);
    assert!(report.cancel_requested.is_empty());
    let now = db_now(&pool).await;
    for c in &claimed[..2] {
        let until = store
            .get(None, c.id)
            .await
            .unwrap()
            .unwrap()
            .locked_until
            .unwrap();
        assert!(
            until - now > chrono::Duration::seconds(100),
            "lease extended to 120 s"
        );
    }
    // Another worker name does not extend anything.
    let report = store
        .heartbeat("intruder", &leases, Duration::from_secs(120))
        .await
        .unwrap();
    assert_eq!(report.lost.len(), 3);
    assert!(
        store
            .heartbeat("w", &[], Duration::from_secs(1))
            .await
            .unwrap()
            .lost
            .is_empty()
    );
}
