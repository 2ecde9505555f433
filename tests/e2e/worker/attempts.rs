//! What a worker makes of its guests' outcomes: `flaky` retried to success on its third
//! attempt and `fatal` dead at once; a fresh instance per run (`counter` reads one every
//! time, at concurrency four); and hostile guests (a spin past its timeout, a panic)
//! failing with named reasons while the worker keeps running the others.

use super::*;

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn flaky_succeeds_on_its_third_attempt_and_fatal_dies_at_once(pool: PgPool) {
    let fixture = setup(&pool, &[("flaky", 3, None), ("fatal", 3, None)]).await;
    let (store, sandbox) = (fixture.store.clone(), fixture.sandbox().clone());
    let flaky = enqueue(&fixture, "flaky", r#"{"succeed_on":3}"#).await;
    let fatal = enqueue(&fixture, "fatal", "{}").await;

    let summary = drain(&store, &sandbox, 2).await;

    let job = store.get(None, flaky).await.unwrap().unwrap();
    let history = store.attempts(None, flaky).await.unwrap();
    assert_eq!(
        job.state,
        JobState::Completed,
        "worker {summary:?}, job {job:?}, attempts {history:?}"
    );
    assert_eq!(job.attempt, 3);
    let attempts = store.attempts(None, flaky).await.unwrap();
    let outcomes: Vec<_> = attempts.iter().map(|a| a.outcome).collect();
    use AttemptOutcome::*;
    assert_eq!(outcomes, [Some(Retry), Some(Retry), Some(Completed)]);
    assert!(
        attempts[0]
            .error
            .as_deref()
            .unwrap()
            .starts_with("guest retry:"),
        "{:?}",
        attempts[0].error
    );

    let job = store.get(None, fatal).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Dead);
    assert_eq!(job.attempt, 1);
    assert!(
        job.last_error
            .as_deref()
            .unwrap()
            .starts_with("guest fatal:"),
        "{:?}",
        job.last_error
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn counter_reads_one_on_every_run_at_concurrency_four(pool: PgPool) {
    let fixture = setup(&pool, &[("counter", 1, None)]).await;
    let (store, sandbox) = (fixture.store.clone(), fixture.sandbox().clone());
    let mut ids = Vec::new();
    for _ in 0..20 {
        ids.push(enqueue(&fixture, "counter", "{}").await);
    }
    let summary = drain(&store, &sandbox, 4).await;
    assert_eq!(summary.completed, 20);
    for id in ids {
        let job = store.get(None, id).await.unwrap().unwrap();
        assert_eq!(
            job.output.as_deref(),
            Some(&b"1"[..]),
            "job {id} saw shared state"
        );
    }
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn hostile_guests_fail_with_named_reasons_and_the_worker_keeps_going(pool: PgPool) {
    let fixture = setup(
        &pool,
        &[
            ("spin-forever", 1, Some(200)),
            ("panic", 1, None),
            ("echo", 1, None),
        ],
    )
    .await;
    let (store, sandbox) = (fixture.store.clone(), fixture.sandbox().clone());
    let spin = enqueue(&fixture, "spin-forever", "{}").await;
    let panic = enqueue(&fixture, "panic", "{}").await;
    let echo = enqueue(&fixture, "echo", "still here").await;

    drain(&store, &sandbox, 3).await;

    let job = store.get(None, spin).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Dead);
    assert_eq!(job.last_error.as_deref(), Some("timeout (200ms)"));
    let job = store.get(None, panic).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Dead);
    assert!(
        job.last_error.as_deref().unwrap().starts_with("trap:"),
        "{:?}",
        job.last_error
    );
    let job = store.get(None, echo).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Completed);
    assert_eq!(job.output.as_deref(), Some(&b"still here"[..]));
}
