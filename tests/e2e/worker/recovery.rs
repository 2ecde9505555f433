//! A worker that dies or loses track of a job: one killed mid-job is replaced (its lease
//! expires, the reaper returns the job, a fresh worker completes it) and its late result
//! is refused; a job claimed under the worker's name whose reply it never saw is released
//! (attempt given back) and run.

use super::*;
use crate::support::jobs::expire_lease;
use sluice_store::{Completion, Lease, StoreError};

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_worker_killed_mid_job_is_replaced_and_its_late_result_is_dropped(pool: PgPool) {
    let fixture = setup(&pool, &[("sleep", 3, None)]).await;
    let (store, sandbox) = (fixture.store.clone(), fixture.sandbox().clone());
    let id = enqueue(&fixture, "sleep", r#"{"ms":1000}"#).await;
    let mut cfg = config("doomed", 1);
    cfg.drain = false;
    let doomed = tokio::spawn(worker::run(
        store.clone(),
        sandbox.clone(),
        cfg,
        CancellationToken::new(),
    ));
    let first_token: uuid::Uuid = wait_for("the first claim", Duration::from_secs(20), || async {
        sqlx::query_scalar(
            "select lease_token from sluice.jobs where id = $1 and state = 'running'",
        )
        .bind(id)
        .fetch_optional(&pool)
        .await
        .unwrap()
    })
    .await;
    doomed.abort(); // the host dies: no release, no outcome
    let _ = doomed.await;

    // Its lease runs out (moved in SQL rather than waited for) and the reaper returns the job.
    expire_lease(&pool, id).await;
    let reaped = store.reap(100).await.unwrap();
    assert_eq!(reaped.len(), 1);

    // A fresh worker runs the job to completion.
    drain(&store, &sandbox, 1).await;
    let job = store.get(None, id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Completed);
    assert_eq!(job.attempt, 2);

    // The first attempt's late result cannot overwrite anything.
    let old_lease = Lease {
        job_id: id,
        token: first_token,
    };
    let late = store
        .complete(
            &old_lease,
            &Completion {
                output: b"late".to_vec(),
                fuel_used: None,
                follow_ups: Vec::new(),
                log: None,
            },
        )
        .await;
    assert!(
        matches!(late, Err(StoreError::LeaseLost { .. })),
        "{late:?}"
    );
    let job = store.get(None, id).await.unwrap().unwrap();
    assert_ne!(job.output.as_deref(), Some(&b"late"[..]));
    let attempts = store.attempts(None, id).await.unwrap();
    let outcomes: Vec<_> = attempts.iter().map(|a| a.outcome).collect();
    assert_eq!(
        outcomes,
        [
            Some(AttemptOutcome::LeaseExpired),
            Some(AttemptOutcome::Completed)
        ]
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_job_claimed_under_the_workers_name_but_not_run_is_released_and_run(pool: PgPool) {
    let fixture = setup(&pool, &[("echo", 3, None)]).await;
    let (store, sandbox) = (fixture.store.clone(), fixture.sandbox().clone());
    // A claim made under the drainer's name whose reply the worker never saw.
    let id = fixture
        .jobs()
        .worker("drainer")
        .lease(Duration::from_secs(300))
        .running(fixture.job("echo", "orphan"))
        .await
        .id;

    let summary = drain(&store, &sandbox, 1).await;

    assert_eq!(summary.completed, 1, "{summary:?}");
    let job = store.get(None, id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Completed);
    assert_eq!(job.attempt, 1, "a release gives the attempt back");
    assert_eq!(
        outcomes(&store, id).await,
        [
            Some(AttemptOutcome::Released),
            Some(AttemptOutcome::Completed)
        ]
    );
}
