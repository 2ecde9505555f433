//! The dashboard's overview figures (throughput per minute, running jobs) and its
//! operator actions on schedules (run now) and job types (switch component).

use std::collections::HashMap;

use chrono::{DateTime, DurationRound as _, Utc};
use sluice_store::{Backoff, Failure, JobState, NewComponent, NewJob, NewSchedule, StoreError};
use sqlx::PgPool;

use crate::common::*;

fn minute(t: DateTime<Utc>) -> DateTime<Utc> {
    t.duration_trunc(chrono::Duration::minutes(1)).unwrap()
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn throughput_puts_completions_and_failures_in_their_minutes(pool: PgPool) {
    let store = setup(&pool).await;
    let f = jobs(&store);
    let done_now = f.completed(job("a")).await;
    let done_before = f.completed(job("b")).await;
    let dead = f.dead(NewJob::new(TENANT, ONCE, "c"), "boom").await;
    // A failed attempt that is retried: outcome `retry`.
    let retried = f.running(job("d")).await;
    store
        .fail(
            &retried.lease,
            &Failure {
                // Due long after this test, so the next claim takes the next job.
                backoff: Backoff {
                    base: std::time::Duration::from_secs(3600),
                    ..Backoff::default()
                },
                ..Failure::retry("flaky")
            },
        )
        .await
        .unwrap();
    // A released attempt is no failure; another tenant's completion is not ours.
    let released = f.running(job("e")).await;
    store.release(&released.lease, "shutdown").await.unwrap();
    f.completed(NewJob::new(OTHER_TENANT, JOB, "o")).await;

    // Move one completion and the dead job's attempt 5 minutes back.
    finished_ago(&pool, &[done_before], "5 minutes").await;
    sqlx::query(
        "UPDATE sluice.attempt_history SET finished_at = finished_at - interval '5 minutes', \
         started_at = started_at - interval '5 minutes' WHERE job_id = $1",
    )
    .bind(dead)
    .execute(&pool)
    .await
    .unwrap();

    let finished: Vec<(String, DateTime<Utc>)> = sqlx::query_as(
        "SELECT 'completed', finished_at FROM sluice.jobs \
         WHERE id = ANY($1) AND state = 'completed' \
         UNION ALL SELECT 'failed', finished_at FROM sluice.attempt_history \
         WHERE job_id = ANY($1) AND outcome IN ('retry', 'dead', 'lease_expired')",
    )
    .bind(&[done_now, done_before, dead, retried.id, released.id][..])
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(finished.len(), 4);
    let mut expected: HashMap<DateTime<Utc>, (i64, i64)> = HashMap::new();
    for (kind, at) in finished {
        let e = expected.entry(minute(at)).or_default();
        if kind == "completed" {
            e.0 += 1;
        } else {
            e.1 += 1;
        }
    }

    let rows = store.throughput(TENANT, 10).await.unwrap();
    assert_eq!(rows.len(), 10);
    let now = db_now(&pool).await;
    assert_eq!(rows.last().unwrap().minute, minute(now));
    for pair in rows.windows(2) {
        assert_eq!(
            pair[1].minute - pair[0].minute,
            chrono::Duration::minutes(1)
        );
    }
    for row in &rows {
        let want = expected.get(&row.minute).copied().unwrap_or_default();
        assert_eq!((row.completed, row.failed), want, "minute {}", row.minute);
    }
    assert_eq!(rows.iter().map(|r| r.completed).sum::<i64>(), 2);
    assert_eq!(rows.iter().map(|r| r.failed).sum::<i64>(), 2);

    // The window is clamped: at most 3 hours, at least one minute.
    assert_eq!(store.throughput(TENANT, 10_000).await.unwrap().len(), 180);
    assert_eq!(store.throughput(TENANT, 0).await.unwrap().len(), 1);
    let empty = store.throughput("nobody", 3).await.unwrap();
    assert!(empty.iter().all(|r| r.completed == 0 && r.failed == 0));
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn running_jobs_lists_the_fleet_by_worker(pool: PgPool) {
    let store = setup(&pool).await;
    let b = jobs(&store).worker("w-b").running(job("1")).await;
    let a2 = jobs(&store)
        .worker("w-a")
        .running(NewJob::new(OTHER_TENANT, JOB, "2"))
        .await;
    let a1 = jobs(&store)
        .worker("w-a")
        .running(NewJob::new(TENANT, ONCE, "3"))
        .await;
    jobs(&store).pending(job("waiting")).await;

    let running = store.running_jobs(100).await.unwrap();
    let seen: Vec<(&str, i64)> = running
        .iter()
        .map(|r| (r.worker.as_str(), r.job_id))
        .collect();
    assert_eq!(seen, [("w-a", a2.id), ("w-a", a1.id), ("w-b", b.id)]);
    let first = &running[0];
    assert_eq!(
        (
            first.tenant.as_str(),
            first.job_type.as_str(),
            first.attempt
        ),
        (OTHER_TENANT, JOB, 1)
    );
    assert!(first.started_at.is_some());
    assert_eq!(store.running_jobs(1).await.unwrap().len(), 1);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn run_now_enqueues_the_schedules_job_and_leaves_its_slots_alone(pool: PgPool) {
    let store = setup(&pool).await;
    let mut spec = NewSchedule::new(TENANT, "nightly", "0 3 * * *", JOB);
    spec.payload = br#"{"report":"daily"}"#.to_vec();
    spec.priority = 20;
    spec.max_attempts = Some(2);
    store.create_schedule(&spec).await.unwrap();
    // Paused: an explicit run still works.
    let before = store.pause_schedule(TENANT, "nightly").await.unwrap();

    let id = store.run_schedule_now(TENANT, "nightly").await.unwrap();
    let j = store.get(Some(TENANT), id).await.unwrap().unwrap();
    assert_eq!(j.job_type, JOB);
    assert_eq!(j.payload, br#"{"report":"daily"}"#);
    assert_eq!((j.priority, j.max_attempts), (20, 2));
    assert_eq!(j.state, JobState::Pending);
    assert!(j.run_at <= db_now(&pool).await);

    let after = store
        .get_schedule(TENANT, "nightly")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        after, before,
        "next slot, last fired slot and counters unchanged"
    );
    let slots: i64 = sqlx::query_scalar("SELECT count(*) FROM sluice.schedule_slots")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(slots, 0);

    // Another tenant's schedule, or none, is not found.
    for (tenant, name) in [(OTHER_TENANT, "nightly"), (TENANT, "weekly")] {
        match store.run_schedule_now(tenant, name).await {
            Err(StoreError::NotFound {
                entity: "schedule",
                id,
            }) => {
                assert!(id.contains(name), "{id}")
            }
            other => panic!("expected schedule not found, got {other:?}"),
        }
    }
    assert_eq!(count_jobs(&pool).await, 1);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_job_type_switches_between_its_tenants_component_versions(pool: PgPool) {
    let store = setup(&pool).await;
    let v1 = store.get_job_type(TENANT, ONCE).await.unwrap().unwrap();
    let component = |tenant: &str, bytes: &[u8]| NewComponent {
        tenant: tenant.into(),
        name: "mailer".into(),
        version: None,
        bytes: bytes.to_vec(),
        contract: 2,
    };
    let v2 = store
        .put_component(&component(TENANT, b"\0asm version two"))
        .await
        .unwrap();
    let theirs = store
        .put_component(&component(OTHER_TENANT, b"\0asm theirs"))
        .await
        .unwrap();

    let switched = store
        .set_job_type_component(TENANT, ONCE, v2.id)
        .await
        .unwrap();
    assert_eq!(switched.component_id, v2.id);
    assert_eq!(switched.max_attempts, 1, "other settings are kept");
    assert_eq!(
        store.get_job_type(TENANT, ONCE).await.unwrap().unwrap(),
        switched
    );
    let back = store
        .set_job_type_component(TENANT, ONCE, v1.component_id)
        .await
        .unwrap();
    assert_eq!(back.component_id, v1.component_id);
    assert!(back.updated_at >= v1.updated_at);

    for foreign in [theirs.id, 987_654] {
        match store.set_job_type_component(TENANT, ONCE, foreign).await {
            Err(StoreError::NotFound {
                entity: "component",
                id,
            }) => {
                assert!(id.contains(&foreign.to_string()), "{id}")
            }
            other => panic!("expected component not found, got {other:?}"),
        }
    }
    match store
        .set_job_type_component(TENANT, "no-such-type", v2.id)
        .await
    {
        Err(StoreError::UnknownJobType { job_type, .. }) => assert_eq!(job_type, "no-such-type"),
        other => panic!("expected UnknownJobType, got {other:?}"),
    }
    let unchanged = store.get_job_type(TENANT, ONCE).await.unwrap().unwrap();
    assert_eq!(unchanged.component_id, v1.component_id);
    // The other tenant's type of the same name is untouched throughout.
    let theirs_type = store
        .get_job_type(OTHER_TENANT, ONCE)
        .await
        .unwrap()
        .unwrap();
    assert_ne!(theirs_type.component_id, v2.id);
}
