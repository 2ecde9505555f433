//! The worker against real Postgres and real components: retries and dead-lettering,
//! fresh instances per attempt, cancellation of a running guest, and a worker that dies
//! mid-job being replaced without its late result overwriting anything.

use std::time::{Duration, Instant};

use crate::support::jobs::expire_lease;
use crate::support::{Fixture, wait_for};
use sluice_sandbox::Sandbox;
use sluice_shared::metrics::Metrics;
use sluice_store::{
    AttemptOutcome, CancelResult, Completion, JobState, JobTypeSpec, Lease, Store, StoreError,
};
use sluice_worker::{self as worker, Prefetch, WorkerConfig, WorkerSummary};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

/// A job type of tenant `default` named as the sample component that runs it: its
/// attempts, and a timeout in milliseconds (or none).
type Task<'a> = (&'a str, i32, Option<u64>);

/// Tenant `default` with one job type per task (retries after 10 to 50 ms) and a sandbox
/// of 8; worker warnings (a failed claim, a dropped outcome) show up in a failing test's
/// output.
async fn setup(pool: &PgPool, tasks: &[Task<'_>]) -> Fixture {
    let mut fixture = Fixture::new(pool).log("warn,sluice=info").sandbox_of(8);
    for &(task, max_attempts, timeout_ms) in tasks {
        fixture = fixture.job_type_with(task, task, move |spec| JobTypeSpec {
            max_attempts,
            backoff_base: Some(Duration::from_millis(10)),
            backoff_cap: Some(Duration::from_millis(50)),
            timeout: timeout_ms.map(Duration::from_millis),
            // With a timeout, the clock must be what stops a spinning guest: a fast CPU
            // burns the default 5·10⁹ fuel units in well under a second.
            fuel: timeout_ms.map(|_| 1_000_000_000_000),
            ..spec
        });
    }
    fixture.await
}

async fn enqueue(fixture: &Fixture, task: &str, payload: &str) -> i64 {
    fixture.jobs().pending(fixture.job(task, payload)).await
}

fn config(name: &str, concurrency: usize) -> WorkerConfig {
    let mut config = WorkerConfig::new(name);
    config.concurrency = concurrency;
    config.drain = true;
    config.drain_horizon = Duration::from_secs(2);
    config.idle.safety_poll = Duration::from_millis(50);
    config.idle.backoff_first = Duration::from_millis(50);
    config
}

async fn drain(store: &Store, sandbox: &Sandbox, concurrency: usize) -> WorkerSummary {
    let run = worker::run(
        store.clone(),
        sandbox.clone(),
        config("drainer", concurrency),
        CancellationToken::new(),
    );
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("worker drains within a minute")
        .unwrap()
}

/// A worker that runs until the returned token is cancelled (no `--drain`).
fn spawn_worker(
    store: &Store,
    sandbox: &Sandbox,
    mut cfg: WorkerConfig,
) -> (
    tokio::task::JoinHandle<anyhow::Result<WorkerSummary>>,
    CancellationToken,
) {
    cfg.drain = false;
    let shutdown = CancellationToken::new();
    let worker = tokio::spawn(worker::run(
        store.clone(),
        sandbox.clone(),
        cfg,
        shutdown.clone(),
    ));
    (worker, shutdown)
}

/// The outcomes of a job's attempts, oldest first.
async fn outcomes(store: &Store, id: i64) -> Vec<Option<AttemptOutcome>> {
    let attempts = store.attempts(None, id).await.unwrap();
    attempts.iter().map(|a| a.outcome).collect()
}

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
