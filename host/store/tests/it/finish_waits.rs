//! Waiting for a job to finish (`FinishWaits`, migration 0032): a wait returns when the
//! job finishes, woken by the NOTIFY of its finish; at its timeout with the job as it is;
//! `None` for a missing job or another tenant's; at once when closed. Only a watched job's
//! finish notifies, so the drain sends nothing for jobs nobody awaits.

use std::time::{Duration, Instant};

use sluice_store::{
    Completion, FINISHED_CHANNEL, FailResult, Failure, FinishWaits, JobState, SAFETY_POLL,
};
use sqlx::PgPool;
use sqlx::postgres::PgListener;

use crate::common::*;

fn done(output: &str) -> Completion {
    Completion {
        output: output.as_bytes().to_vec(),
        fuel_used: None,
        follow_ups: Vec::new(),
        log: None,
    }
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_wait_returns_when_its_job_finishes(pool: PgPool) {
    let store = setup(&pool).await;
    let waits = FinishWaits::new(store.clone());
    let claimed = jobs(&store).running(job("{}")).await;
    let id = claimed.lease.job_id;

    let waiting = {
        let waits = waits.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let job = waits.wait(Some(TENANT), id, Duration::from_secs(60)).await;
            (job, started.elapsed())
        })
    };
    // The wait marks the job before it sleeps.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let watched: bool = sqlx::query_scalar("SELECT watched FROM sluice.jobs WHERE id = $1")
            .bind(id)
            .fetch_one(&pool)
            .await
            .unwrap();
        if watched && waits.listening() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the wait never marked the job or listened"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    store
        .complete(&claimed.lease, &done("\"ok\""))
        .await
        .unwrap();
    let (job, waited) = waiting.await.unwrap();
    let job = job.unwrap().expect("the job exists");
    assert_eq!(job.state, JobState::Completed);
    assert_eq!(job.output.as_deref(), Some(&b"\"ok\""[..]));
    // Woken by the notification, not by the safety poll (10 s) nor the timeout.
    assert!(waited < SAFETY_POLL, "woke after {waited:?}");
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_wait_ends_at_its_timeout_with_the_job_as_it_is(pool: PgPool) {
    let store = setup(&pool).await;
    let waits = FinishWaits::new(store.clone());
    let finished = jobs(&store).dead(job("{}"), "broken").await;
    let id = jobs(&store).pending(job("{}")).await;
    let waited = waits
        .wait(Some(TENANT), id, Duration::from_millis(300))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(waited.state, JobState::Pending);

    // A finished job answers at once, whatever the timeout.
    let started = Instant::now();
    let waited = waits
        .wait(Some(TENANT), finished, Duration::from_secs(60))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(waited.state, JobState::Dead);
    assert!(started.elapsed() < Duration::from_secs(30));

    // Missing, and another tenant's: none.
    assert!(
        waits
            .wait(Some(TENANT), id + 1000, Duration::from_millis(100))
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        waits
            .wait(Some(OTHER_TENANT), id, Duration::from_millis(100))
            .await
            .unwrap()
            .is_none()
    );
    // ... and another tenant's wait did not mark it.
    let watched: bool = sqlx::query_scalar("SELECT watched FROM sluice.jobs WHERE id = $1")
        .bind(id)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert!(watched, "the first wait marked it");
    let other = jobs(&store)
        .scheduled_in(job("{}"), Duration::from_secs(3600))
        .await;
    waits
        .wait(Some(OTHER_TENANT), other, Duration::from_millis(50))
        .await
        .unwrap();
    let watched: bool = sqlx::query_scalar("SELECT watched FROM sluice.jobs WHERE id = $1")
        .bind(other)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert!(!watched, "another tenant's wait marked the job");
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn closing_ends_the_waits_in_flight(pool: PgPool) {
    let store = setup(&pool).await;
    let waits = FinishWaits::new(store.clone());
    let id = jobs(&store).pending(job("{}")).await;
    let waiting = {
        let waits = waits.clone();
        tokio::spawn(async move { waits.wait(Some(TENANT), id, Duration::from_secs(600)).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    waits.close();
    let job = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("close ended the wait")
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(job.state, JobState::Pending);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn only_a_watched_jobs_finish_notifies(pool: PgPool) {
    let store = setup(&pool).await;
    let mut listener = PgListener::connect_with(&pool).await.unwrap();
    listener.listen(FINISHED_CHANNEL).await.unwrap();

    // Nobody waits: completing, failing and cancelling notify nothing.
    let unwatched = jobs(&store).completed(job("{}")).await;
    jobs(&store).dead(job("{}"), "broken").await;
    jobs(&store).cancelled(job("{}")).await;
    // A retry is not a finish (migration 0037's trigger tests `finished_at`): a watched
    // job put back to pending notifies nothing.
    let retried = jobs(&store).running(job("{}")).await;
    store
        .watch_finish(Some(TENANT), retried.lease.job_id)
        .await
        .unwrap();
    let back = store
        .fail(&retried.lease, &Failure::retry("again"))
        .await
        .unwrap();
    assert!(matches!(back, FailResult::Retrying { .. }), "{back:?}");
    // A watched one notifies its id, once.
    let claimed = jobs(&store).running(job("{}")).await;
    let watched = claimed.lease.job_id;
    store.watch_finish(Some(TENANT), watched).await.unwrap();
    store.complete(&claimed.lease, &done("1")).await.unwrap();
    let n = tokio::time::timeout(Duration::from_secs(10), listener.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        n.payload(),
        watched.to_string(),
        "not {unwatched}'s finish, nor the retry's"
    );
    // Nothing else was sent: the next notice is this marker.
    sqlx::query("SELECT pg_notify($1, 'marker')")
        .bind(FINISHED_CHANNEL)
        .execute(&pool)
        .await
        .unwrap();
    let n = tokio::time::timeout(Duration::from_secs(10), listener.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n.payload(), "marker", "a second notice for one finish");
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn without_listen_a_wait_still_ends_by_reading_the_job_again(pool: PgPool) {
    // A direct URL nothing answers on: the waits cannot LISTEN (a pooler that drops it, a
    // listener that cannot connect) and fall back to re-reading their job.
    let store = setup(&pool)
        .await
        .with_direct_url("postgres://postgres@127.0.0.1:1/none");
    let waits = FinishWaits::new(store.clone());
    let claimed = jobs(&store).running(job("{}")).await;
    let id = claimed.lease.job_id;
    let waiting = {
        let waits = waits.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let job = waits.wait(Some(TENANT), id, Duration::from_secs(60)).await;
            (job, started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    store.complete(&claimed.lease, &done("2")).await.unwrap();
    let (job, waited) = waiting.await.unwrap();
    assert_eq!(job.unwrap().unwrap().state, JobState::Completed);
    assert!(
        !waits.listening(),
        "it listened on a URL nothing answers on"
    );
    // Found by the fallback re-read, long before the wait's end.
    assert!(waited < Duration::from_secs(30), "after {waited:?}");
}
