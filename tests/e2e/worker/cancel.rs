//! Cancelling a running job: the cancel interrupts a spinning guest; and a cancel the
//! worker never heard of, found when the job is released at shutdown, ends the job
//! `cancelled` in the store, the worker's summary and its metrics (not `released`).

use std::time::Instant;

use super::*;
use sluice_shared::metrics::Metrics;
use sluice_store::CancelResult;

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn cancelling_a_running_job_interrupts_its_guest(pool: PgPool) {
    let fixture = setup(&pool, &[("spin-forever", 3, None)]).await;
    let (store, sandbox) = (fixture.store.clone(), fixture.sandbox().clone());
    let id = enqueue(&fixture, "spin-forever", "{}").await;
    let (worker, shutdown) = spawn_worker(&store, &sandbox, config("canceller", 1));

    wait_for("the job to start", Duration::from_secs(20), || async {
        let job = store.get(None, id).await.unwrap().unwrap();
        (job.state == JobState::Running).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await; // let the guest spin
    let asked = Instant::now();
    assert_eq!(
        store.cancel(None, id).await.unwrap(),
        CancelResult::CancelRequested
    );
    wait_for(
        "the job to be cancelled",
        Duration::from_secs(5),
        || async {
            let job = store.get(None, id).await.unwrap().unwrap();
            (job.state == JobState::Cancelled).then_some(())
        },
    )
    .await;
    eprintln!("cancelled a spinning guest in {:?}", asked.elapsed());
    shutdown.cancel();
    let summary = worker.await.unwrap().unwrap();
    assert_eq!(summary.cancelled, 1);
    let attempts = store.attempts(None, id).await.unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].outcome, Some(AttemptOutcome::Cancelled));
}

/// A job whose cancel was requested while it ran, but whose worker never heard of it (no
/// LISTEN, no heartbeat yet), is interrupted by shutdown: the release finds the cancel and
/// ends the job `cancelled`. The worker's summary and its metrics must say cancelled, as
/// the store did, not released.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_running_job_released_at_shutdown_with_a_cancel_pending_counts_as_cancelled(
    pool: PgPool,
) {
    let fixture = setup(&pool, &[("spin-forever", 3, Some(60_000))]).await;
    let (store, sandbox) = (fixture.store.clone(), fixture.sandbox().clone());
    let id = enqueue(&fixture, "spin-forever", "{}").await;
    let mut cfg = config("deaf", 1);
    // Hears of the cancel neither by notice nor by heartbeat before the shutdown.
    cfg.listen = worker::Listen::Off;
    cfg.lease = Duration::from_secs(300);
    cfg.shutdown = worker::ShutdownTimeouts {
        drain: Duration::ZERO,
        budget: Duration::from_secs(30),
    };
    let metrics = Metrics::new();
    cfg.metrics = metrics.clone();
    let (worker, shutdown) = spawn_worker(&store, &sandbox, cfg);
    wait_for("the job to start", Duration::from_secs(20), || async {
        let job = store.get(None, id).await.unwrap().unwrap();
        (job.state == JobState::Running).then_some(())
    })
    .await;
    assert_eq!(
        store.cancel(None, id).await.unwrap(),
        CancelResult::CancelRequested
    );
    shutdown.cancel();
    let summary = worker.await.unwrap().unwrap();

    assert_eq!(
        store.get(None, id).await.unwrap().unwrap().state,
        JobState::Cancelled
    );
    assert_eq!(
        outcomes(&store, id).await,
        [Some(AttemptOutcome::Cancelled)]
    );
    assert_eq!((summary.cancelled, summary.released), (1, 0), "{summary:?}");
    let text = metrics.encode();
    let series = "{tenant=\"default\",job_type=\"spin-forever\"}";
    assert!(
        text.lines()
            .any(|l| l == format!("sluice_jobs_cancelled_total{series} 1")),
        "{text}"
    );
    assert!(
        !text.contains(&format!("sluice_jobs_released_total{series}")),
        "{text}"
    );
}
