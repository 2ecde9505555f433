//! Stored attempt logs: written by the statement that ends the attempt (complete, fail,
//! mark_cancelled) only when the attempt logged something, fenced like it, read back per
//! tenant, and deleted with their job by retention.

use sluice_store::{AttemptLog, AttemptOutcome, Completion, Failure, RetentionPolicy};
use sqlx::PgPool;

use crate::common::*;

fn log(text: &str, dropped: u64) -> Option<AttemptLog> {
    AttemptLog::captured(text.as_bytes().to_vec(), dropped)
}

async fn log_rows(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM sluice.attempt_logs")
        .fetch_one(pool)
        .await
        .unwrap()
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn every_end_of_an_attempt_stores_its_log_and_quiet_ones_store_nothing(pool: PgPool) {
    let store = setup(&pool).await;
    let quiet = jobs(&store).completed(job("quiet")).await;
    assert_eq!(
        log_rows(&pool).await,
        0,
        "a quiet completion writes no log row"
    );

    // A batch mixing a logged and a quiet completion.
    let a = jobs(&store).worker("w").running(job("a")).await;
    let b = jobs(&store).worker("w").running(job("b")).await;
    let done = |log| Completion {
        output: b"ok".to_vec(),
        log,
        ..Completion::default()
    };
    let results = store
        .complete_many(&[
            (a.lease, done(log("[INFO] hello\n", 0))),
            (b.lease, done(None)),
        ])
        .await
        .unwrap();
    assert!(results.iter().all(Result::is_ok));

    // A failed attempt, then its retry completes: one log per attempt.
    let c = jobs(&store).worker("w").running(job("c")).await;
    let failure = Failure {
        log: log("[WARN] first try\n", 12_345),
        ..Failure::retry("busy")
    };
    store.fail(&c.lease, &failure).await.unwrap();
    make_due(&pool, c.id).await;
    let again = claim_one(&store, "w").await;
    assert_eq!((again.id, again.attempt), (c.id, 2));
    store
        .complete(&again.lease, &done(log("[INFO] second\n", 0)))
        .await
        .unwrap();

    // A cancelled attempt keeps its log too.
    let d = jobs(&store).worker("w").running(job("d")).await;
    store
        .mark_cancelled(&d.lease, "cancelled", log("[stdout] bye\n", 0).as_ref())
        .await
        .unwrap();
    assert_eq!(log_rows(&pool).await, 4);

    let logs = store.attempt_logs(Some(TENANT), a.id, None).await.unwrap();
    assert_eq!(logs.len(), 1);
    assert_eq!(logs[0].log.as_deref(), Some(&b"[INFO] hello\n"[..]));
    assert_eq!(logs[0].outcome, Some(AttemptOutcome::Completed));
    let quiet_logs = store.attempt_logs(Some(TENANT), b.id, None).await.unwrap();
    assert_eq!(quiet_logs.len(), 1, "the attempt is listed");
    assert!(!quiet_logs[0].has_log(), "but it has no log");
    assert!(
        store.attempt_logs(Some(TENANT), quiet, None).await.unwrap()[0]
            .log
            .is_none()
    );

    let retried = store.attempt_logs(Some(TENANT), c.id, None).await.unwrap();
    let attempts: Vec<_> = retried.iter().map(|r| (r.attempt, r.outcome)).collect();
    assert_eq!(
        attempts,
        [
            (1, Some(AttemptOutcome::Retry)),
            (2, Some(AttemptOutcome::Completed))
        ]
    );
    assert_eq!(
        retried[0].text(),
        "[WARN] first try\n… 12,345 bytes dropped\n"
    );
    assert_eq!(retried[1].text(), "[INFO] second\n");
    let first = store
        .attempt_logs(Some(TENANT), c.id, Some(1))
        .await
        .unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].dropped_bytes, 12_345);

    let cancelled = store.attempt_logs(Some(TENANT), d.id, None).await.unwrap();
    assert_eq!(cancelled[0].outcome, Some(AttemptOutcome::Cancelled));
    assert_eq!(cancelled[0].text(), "[stdout] bye\n");
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_stale_lease_holder_stores_no_log(pool: PgPool) {
    let store = setup(&pool).await;
    let first = jobs(&store).worker("w1").running(job("x")).await;
    expire_lease(&pool, first.id).await;
    store.reap(10).await.unwrap();
    make_due(&pool, first.id).await;
    let _second = claim_one(&store, "w2").await;
    let stale = Completion {
        log: log("[INFO] from a stale holder\n", 0),
        ..Completion::default()
    };
    assert!(store.complete(&first.lease, &stale).await.is_err());
    let failure = Failure {
        log: log("[INFO] stale\n", 0),
        ..Failure::retry("x")
    };
    assert!(store.fail(&first.lease, &failure).await.is_err());
    assert!(
        store
            .mark_cancelled(&first.lease, "x", failure.log.as_ref())
            .await
            .is_err()
    );
    assert_eq!(log_rows(&pool).await, 0);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn logs_are_read_by_the_jobs_tenant_only(pool: PgPool) {
    let store = setup(&pool).await;
    let running = jobs(&store).worker("w").running(job("x")).await;
    let done = Completion {
        log: log("[INFO] private\n", 0),
        ..Completion::default()
    };
    store.complete(&running.lease, &done).await.unwrap();
    assert_eq!(
        store
            .attempt_logs(Some(TENANT), running.id, None)
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(
        store
            .attempt_logs(Some(OTHER_TENANT), running.id, None)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .attempt_logs(Some("nul\0tenant"), running.id, None)
            .await
            .unwrap()
            .is_empty()
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn retention_deletes_logs_with_their_job(pool: PgPool) {
    let store = setup(&pool).await;
    let old = jobs(&store).worker("w").running(job("old")).await;
    let young = jobs(&store).worker("w").running(job("young")).await;
    for claimed in [&old, &young] {
        let done = Completion {
            log: log("[INFO] kept while the job is\n", 0),
            ..Completion::default()
        };
        store.complete(&claimed.lease, &done).await.unwrap();
    }
    finished_ago(&pool, &[old.id], "4 days").await;
    let report = store.prune(&RetentionPolicy::default()).await.unwrap();
    assert_eq!(report.completed, 1);
    let left: Vec<i64> = sqlx::query_scalar("SELECT job_id FROM sluice.attempt_logs")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(left, [young.id]);
}
