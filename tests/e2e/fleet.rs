//! Fleet behaviour of real `sluice worker` processes against real Postgres: an idle
//! worker wakes on NOTIFY within milliseconds (and on its back-off without LISTEN), and
//! SIGTERM drains running jobs, releasing what cannot finish, exiting 0.

use std::time::{Duration, Instant};

use crate::support::jobs::Jobs;
use crate::support::worker_process::WorkerProcess;
use crate::support::{Fixture, Sluice, wait_for};
use sluice_store::{AttemptOutcome, JobState, JobTypeSpec, NewJob, RunAt, Store};
use sqlx::PgPool;

const TENANT: &str = "default";

/// Tenant `default` with job type `task` run by the sample of that name (fuel for hours,
/// so a long `sleep` is not cut short).
async fn setup(pool: &PgPool, task: &str) -> Store {
    let fixture = Fixture::new(pool)
        .job_type_with(task, task, |spec| JobTypeSpec {
            fuel: Some(1 << 50),
            ..spec
        })
        .await;
    fixture.store.clone()
}

async fn enqueue(store: &Store, task: &str, payload: &str, run_at: RunAt) -> i64 {
    let job = NewJob::new(TENANT, task, payload.as_bytes().to_vec()).with_run_at(run_at);
    store.enqueue(&job).await.unwrap().id
}

async fn state(pool: &PgPool, id: i64) -> JobState {
    Store::new(pool.clone())
        .get(None, id)
        .await
        .unwrap()
        .unwrap()
        .state
}

async fn wait_state(
    pool: &PgPool,
    worker: &WorkerProcess,
    id: i64,
    want: JobState,
    limit: Duration,
) {
    let deadline = Instant::now() + limit;
    loop {
        let now = state(pool, id).await;
        if now == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "job {id} is {now:?}, not {want:?}, after {limit:?}; worker log:\n{}",
            worker.log()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Seconds (database clock) from `since` (a column of the job) to its latest attempt's
/// start, once that attempt exists.
async fn start_delay(pool: &PgPool, id: i64, since: &str) -> f64 {
    let sql = match since {
        "created_at" => {
            "SELECT extract(epoch FROM a.started_at - j.created_at)::float8 \
             FROM sluice.job_attempts a JOIN sluice.jobs j ON j.id = a.job_id \
             WHERE a.job_id = $1 ORDER BY a.attempt DESC LIMIT 1"
        }
        "run_at" => {
            "SELECT extract(epoch FROM a.started_at - j.run_at)::float8 \
             FROM sluice.job_attempts a JOIN sluice.jobs j ON j.id = a.job_id \
             WHERE a.job_id = $1 ORDER BY a.attempt DESC LIMIT 1"
        }
        other => panic!("no such column {other}"),
    };
    wait_for("the job to start", Duration::from_secs(40), || async {
        sqlx::query_scalar::<_, f64>(sql)
            .bind(id)
            .fetch_optional(pool)
            .await
            .unwrap()
    })
    .await
}

/// Waits for the worker's first job to complete (it compiles the component), so what is
/// measured next is the wake-up, not Cranelift.
async fn warm_up(pool: &PgPool, store: &Store, worker: &WorkerProcess) {
    let id = enqueue(store, "echo", "warm-up", RunAt::Now).await;
    wait_state(
        pool,
        worker,
        id,
        JobState::Completed,
        Duration::from_secs(60),
    )
    .await;
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn an_idle_listening_worker_starts_new_and_delayed_jobs_at_once(pool: PgPool) {
    let store = setup(&pool, "echo").await;
    let sluice = Sluice::new(&pool);
    let mut worker = WorkerProcess::spawn(&sluice, "listener", &["--concurrency", "2"]);
    warm_up(&pool, &store, &worker).await;
    tokio::time::sleep(Duration::from_millis(300)).await; // idle: its safety poll is 30 s away

    let id = enqueue(&store, "echo", "now", RunAt::Now).await;
    let pickup = start_delay(&pool, id, "created_at").await;
    eprintln!(
        "LISTEN pickup: enqueue commit → attempt start {:.1} ms",
        pickup * 1e3
    );
    assert!(pickup <= 1.0, "picked up after {pickup:.3} s");

    // A delayed job starts when due, not at the 30 s safety poll.
    let id = enqueue(
        &store,
        "echo",
        "later",
        RunAt::Delay(Duration::from_millis(1500)),
    )
    .await;
    let late = start_delay(&pool, id, "run_at").await;
    eprintln!("delayed job: due → attempt start {:.1} ms", late * 1e3);
    assert!(
        (0.0..=1.0).contains(&late),
        "started {late:.3} s after it was due"
    );

    worker.signal("TERM");
    let status = worker.wait_timeout(Duration::from_secs(20)).expect("exits");
    assert!(status.success(), "{status}; log:\n{}", worker.log());
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn without_listen_a_worker_finds_new_work_within_its_back_off(pool: PgPool) {
    let store = setup(&pool, "echo").await;
    let sluice = Sluice::new(&pool);
    let backoff_max = Duration::from_millis(1000);
    let mut worker = WorkerProcess::spawn(
        &sluice,
        "poller",
        &[
            "--no-listen",
            "--idle-backoff",
            "250ms",
            "--idle-backoff-max",
            "1s",
        ],
    );
    warm_up(&pool, &store, &worker).await;
    // Idle long enough for the back-off to reach its longest wait.
    tokio::time::sleep(Duration::from_millis(2500)).await;

    let id = enqueue(&store, "echo", "polled", RunAt::Now).await;
    let pickup = start_delay(&pool, id, "created_at").await;
    eprintln!(
        "polling pickup: {:.1} ms (back-off window {backoff_max:?})",
        pickup * 1e3
    );
    assert!(
        pickup <= backoff_max.as_secs_f64() + 1.0,
        "picked up after {pickup:.3} s"
    );
    let log = worker.log();
    assert!(log.contains("LISTEN disabled"), "log:\n{log}");

    worker.signal("TERM");
    let status = worker.wait_timeout(Duration::from_secs(20)).expect("exits");
    assert!(status.success(), "{status}; log:\n{}", worker.log());
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn sigterm_releases_a_long_job_without_using_its_attempt_and_exits_0(pool: PgPool) {
    let store = setup(&pool, "sleep").await;
    let sluice = Sluice::new(&pool);
    let budget = Duration::from_secs(4);
    let mut worker = WorkerProcess::spawn(
        &sluice,
        "terminated",
        &["--drain-timeout", "1s", "--shutdown-timeout", "4s"],
    );
    let id = enqueue(&store, "sleep", r#"{"ms":120000}"#, RunAt::Now).await;
    wait_state(
        &pool,
        &worker,
        id,
        JobState::Running,
        Duration::from_secs(30),
    )
    .await;
    assert_eq!(store.get(None, id).await.unwrap().unwrap().attempt, 1);

    let sent = Instant::now();
    worker.signal("TERM");
    let status = worker
        .wait_timeout(budget + Duration::from_secs(5))
        .unwrap_or_else(|| panic!("no exit; log:\n{}", worker.log()));
    let took = sent.elapsed();
    eprintln!("SIGTERM → exit with a long job running: {took:?} (budget {budget:?})");
    assert!(status.success(), "{status}; log:\n{}", worker.log());
    assert!(took <= budget + Duration::from_secs(2), "took {took:?}");

    let job = store.get(None, id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Pending);
    assert_eq!(job.attempt, 0, "the released attempt is given back");
    let attempts = store.attempts(None, id).await.unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].outcome, Some(AttemptOutcome::Released));
    assert_eq!(attempts[0].worker, "terminated");
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn sigterm_lets_a_short_job_complete_before_exiting(pool: PgPool) {
    let store = setup(&pool, "sleep").await;
    let sluice = Sluice::new(&pool);
    let mut worker = WorkerProcess::spawn(&sluice, "finisher", &[]);
    let id = enqueue(&store, "sleep", r#"{"ms":1500}"#, RunAt::Now).await;
    wait_state(
        &pool,
        &worker,
        id,
        JobState::Running,
        Duration::from_secs(30),
    )
    .await;

    worker.signal("TERM");
    let status = worker
        .wait_timeout(Duration::from_secs(15 + 5))
        .unwrap_or_else(|| panic!("no exit; log:\n{}", worker.log()));
    assert!(status.success(), "{status}; log:\n{}", worker.log());
    let job = store.get(None, id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Completed, "log:\n{}", worker.log());
    assert_eq!(job.attempt, 1);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_long_running_worker_releases_a_job_held_under_its_name_that_it_does_not_run(
    pool: PgPool,
) {
    let store = setup(&pool, "echo").await;
    store.create_tenant("elsewhere").await.unwrap();
    let sluice = Sluice::new(&pool);
    // Lease 3 s: the orphan check runs with each heartbeat, every second. The worker
    // serves another tenant, so it never claims the job itself.
    let mut worker = WorkerProcess::spawn(
        &sluice,
        "keeper",
        &["--lease", "3s", "--only-tenant", "elsewhere"],
    );
    // A claim under the worker's name whose reply it never saw (the connection broke
    // after the commit).
    let id = Jobs::new(&store)
        .worker("keeper")
        .lease(Duration::from_secs(300))
        .running(NewJob::new(TENANT, "echo", "orphan"))
        .await
        .id;

    wait_state(
        &pool,
        &worker,
        id,
        JobState::Pending,
        Duration::from_secs(15),
    )
    .await;
    let job = store.get(None, id).await.unwrap().unwrap();
    assert_eq!(job.attempt, 0, "a release gives the attempt back");
    let outcomes: Vec<_> = store
        .attempts(None, id)
        .await
        .unwrap()
        .iter()
        .map(|a| a.outcome)
        .collect();
    assert_eq!(outcomes, [Some(AttemptOutcome::Released)]);
    worker.signal("TERM");
    let status = worker.wait_timeout(Duration::from_secs(20)).expect("exits");
    assert!(status.success(), "{status}; log:\n{}", worker.log());
}
