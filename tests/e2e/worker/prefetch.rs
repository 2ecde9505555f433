//! The worker's prefetch queue: every job still runs exactly once; queued jobs are given
//! back unspent at shutdown while the executing one finishes; and queued jobs hold the
//! short prefetch lease while a started one is renewed to the full lease.

use super::*;
use sluice_worker::Prefetch;

/// With a prefetch queue, every job still runs exactly once and every slot is used.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_prefetching_worker_runs_every_job_once(pool: PgPool) {
    let fixture = setup(&pool, &[("echo", 3, None)]).await;
    let (store, sandbox) = (fixture.store.clone(), fixture.sandbox().clone());
    let mut ids = Vec::new();
    for i in 0..60 {
        ids.push(enqueue(&fixture, "echo", &format!("job {i}")).await);
    }
    let mut cfg = config("prefetcher", 2);
    cfg.prefetch = Prefetch::Fixed(16);
    let summary = worker::run(
        store.clone(),
        sandbox.clone(),
        cfg,
        CancellationToken::new(),
    )
    .await
    .unwrap();

    assert_eq!(summary.completed, 60, "{summary:?}");
    for (i, id) in ids.into_iter().enumerate() {
        let job = store.get(None, id).await.unwrap().unwrap();
        assert_eq!(job.state, JobState::Completed);
        assert_eq!(job.attempt, 1);
        assert_eq!(job.output.as_deref(), Some(format!("job {i}").as_bytes()));
        assert_eq!(store.attempts(None, id).await.unwrap().len(), 1);
    }
}

/// Jobs waiting in the prefetch queue when the worker is asked to stop are given back at
/// once, their attempt not used up, while the executing one finishes.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn prefetched_jobs_are_released_unspent_on_shutdown(pool: PgPool) {
    let fixture = setup(&pool, &[("sleep", 3, None)]).await;
    let (store, sandbox) = (fixture.store.clone(), fixture.sandbox().clone());
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(enqueue(&fixture, "sleep", r#"{"ms":400}"#).await);
    }
    let mut cfg = config("prefetcher", 1);
    cfg.prefetch = Prefetch::Fixed(4);
    let (worker, shutdown) = spawn_worker(&store, &sandbox, cfg);
    // One claim takes all five: one executes, four wait in the queue.
    wait_for("five jobs to be held", Duration::from_secs(20), || async {
        let mut running = 0;
        for id in &ids {
            let job = store.get(None, *id).await.unwrap().unwrap();
            running += usize::from(job.state == JobState::Running);
        }
        (running == 5).then_some(())
    })
    .await;
    shutdown.cancel();
    let summary = worker.await.unwrap().unwrap();

    assert_eq!(summary.completed, 1, "{summary:?}");
    assert_eq!(summary.released, 4, "{summary:?}");
    let mut pending = 0;
    for id in ids {
        let job = store.get(None, id).await.unwrap().unwrap();
        if job.state == JobState::Pending {
            pending += 1;
            assert_eq!(job.attempt, 0, "a released job gets its attempt back");
            assert_eq!(outcomes(&store, id).await, [Some(AttemptOutcome::Released)]);
        } else {
            assert_eq!(job.state, JobState::Completed);
        }
    }
    assert_eq!(pending, 4);
}

/// A prefetching worker claims with the short prefetch lease, so the queue of a worker
/// that dies comes back soon; the heartbeat renews a job that started to the full lease
/// and keeps the queued ones on the short one.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn queued_jobs_hold_the_prefetch_lease_and_a_started_job_the_full_lease(pool: PgPool) {
    let fixture = setup(&pool, &[("sleep", 3, Some(20_000))]).await;
    let (store, sandbox) = (fixture.store.clone(), fixture.sandbox().clone());
    let mut ids = Vec::new();
    for _ in 0..4 {
        ids.push(enqueue(&fixture, "sleep", r#"{"ms":2500}"#).await);
    }
    let mut cfg = config("prefetcher", 1);
    cfg.prefetch = Prefetch::Fixed(4);
    cfg.lease = Duration::from_secs(60);
    cfg.prefetch_lease = Duration::from_secs(3);
    let (worker, shutdown) = spawn_worker(&store, &sandbox, cfg);
    // Seconds of lease left on each job, in id order (None: not running).
    let leases_left = || async {
        let rows: Vec<(i64, Option<f64>)> = sqlx::query_as(
            "SELECT id, extract(epoch FROM locked_until - now())::float8
             FROM sluice.jobs ORDER BY id",
        )
        .fetch_all(&pool)
        .await
        .unwrap();
        rows.into_iter().map(|(_, left)| left).collect::<Vec<_>>()
    };
    // The first job starts (the slot), the other three wait in the queue. The heartbeat,
    // every third of the prefetch lease, moves the started one onto the full lease.
    let left = wait_for(
        "the started job to get the full lease",
        Duration::from_secs(20),
        || async {
            let left = leases_left().await;
            left[0].is_some_and(|s| s > 30.0).then_some(left)
        },
    )
    .await;
    for queued in &left[1..] {
        let queued = queued.expect("a queued job is held (running, leased)");
        assert!(
            queued <= 3.0,
            "a queued job keeps the prefetch lease: {left:?}"
        );
    }
    shutdown.cancel();
    let summary = worker.await.unwrap().unwrap();
    assert_eq!(summary.completed, 1, "{summary:?}");
    assert_eq!(summary.released, 3, "{summary:?}");
}
