//! The worker's job type registry: a job type changed under a busy worker takes effect
//! within the registry's TTL, never later.

use std::time::Instant;

use super::*;

/// A job type changed while a worker keeps running it is seen within the registry's TTL
/// (5 s), never later: the worker re-reads a record in use before it expires (so its
/// attempts do not wait for the database), and never serves one older than the TTL.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_job_type_changed_under_a_busy_worker_takes_effect_within_the_ttl(pool: PgPool) {
    let fixture = setup(&pool, &[("echo", 1, None), ("fatal", 1, None)]).await;
    let (store, sandbox) = (fixture.store.clone(), fixture.sandbox().clone());
    let (worker, shutdown) = spawn_worker(&store, &sandbox, config("busy", 2));
    let run_one = |payload: &'static str| {
        let (fixture, store) = (&fixture, &store);
        async move {
            let id = enqueue(fixture, "echo", payload).await;
            wait_for("the echo job to end", Duration::from_secs(10), || async {
                let job = store.get(None, id).await.unwrap().unwrap();
                matches!(job.state, JobState::Completed | JobState::Dead).then_some(job.state)
            })
            .await
        }
    };
    // Past half the TTL in use, so that the worker's records are refreshed beside it.
    let busy_until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < busy_until {
        assert_eq!(run_one("{}").await, JobState::Completed);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Point `echo` at the component that fails every attempt for good.
    let fatal = fixture.component_id(fixture.tenant(), "fatal");
    let mut spec = JobTypeSpec::new(fixture.tenant(), "echo", fatal);
    spec.max_attempts = 1;
    store.set_job_type(&spec).await.unwrap();
    let changed = Instant::now();
    loop {
        if run_one("{}").await == JobState::Dead {
            break;
        }
        // 5 s of TTL, and a job's own enqueue-to-end time (a second is generous).
        assert!(
            changed.elapsed() < Duration::from_secs(6),
            "the worker still ran the old component {:?} after the change",
            changed.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    shutdown.cancel();
    worker.await.unwrap().unwrap();
}
