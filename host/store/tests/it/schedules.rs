//! Cron schedules: validation at creation, exactly one job per slot with several hosts
//! firing at once, catch-up policies after downtime, jitter, pause/resume, delete.
//! Time is simulated with `fire_due_schedules_as_of` (or by moving `next_slot` with
//! SQL) instead of sleeping.

use std::collections::BTreeSet;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Timelike as _, Utc};
use sluice_store::{CatchUp, NewSchedule, Notice, ScheduleRecord, Store, StoreError};
use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;

use crate::common::*;

fn every(name: &str, cron: &str) -> NewSchedule {
    NewSchedule::new(TENANT, name, cron, JOB)
}

async fn schedule(store: &Store, name: &str) -> ScheduleRecord {
    store.get_schedule(TENANT, name).await.unwrap().unwrap()
}

/// Slot (schedule_slots.slot) and run_at of every job a schedule enqueued, by slot.
async fn fired(pool: &PgPool, schedule_id: i64) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
    sqlx::query_as(
        "SELECT s.slot, j.run_at FROM sluice.schedule_slots s JOIN sluice.jobs j ON j.id = s.job_id \
         WHERE s.schedule_id = $1 ORDER BY s.slot",
    )
    .bind(schedule_id)
    .fetch_all(pool)
    .await
    .unwrap()
}

async fn count_schedules(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM sluice.schedules")
        .fetch_one(pool)
        .await
        .unwrap()
}

fn message(err: StoreError) -> String {
    err.to_string()
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn bad_schedules_are_refused_naming_the_problem(pool: PgPool) {
    let store = setup(&pool).await;

    let err = message(
        store
            .create_schedule(&every("a", "61 * * * *"))
            .await
            .unwrap_err(),
    );
    assert!(
        err.contains("invalid cron") && err.contains("61 * * * *"),
        "{err}"
    );
    let err = message(
        store
            .create_schedule(&every("a", "* * *"))
            .await
            .unwrap_err(),
    );
    assert!(
        err.contains("invalid cron") && err.contains("3 fields"),
        "{err}"
    );
    let err = message(
        store
            .create_schedule(&every("a", "0 0 30 2 *"))
            .await
            .unwrap_err(),
    );
    assert!(err.contains("never matches"), "{err}");
    // An expression longer than the stored column allows (every minute listed, twice):
    // refused by name before the insert, not by the table's CHECK.
    let minutes = (0..60).map(|m| m.to_string()).collect::<Vec<_>>().join(",");
    let long = format!("{minutes},{minutes} * * * *");
    let err = message(store.create_schedule(&every("a", &long)).await.unwrap_err());
    assert!(
        err.contains("invalid cron") && err.contains("1 to 256 characters"),
        "{err}"
    );

    let mut spec = every("a", "*/5 * * * *");
    spec.tz = "Mars/Olympus".into();
    let err = message(store.create_schedule(&spec).await.unwrap_err());
    assert!(
        err.contains("invalid tz") && err.contains("Mars/Olympus"),
        "{err}"
    );

    let spec = NewSchedule::new(TENANT, "a", "*/5 * * * *", "no-such-type");
    assert!(matches!(
        store.create_schedule(&spec).await.unwrap_err(),
        StoreError::UnknownJobType { .. }
    ));
    let spec = NewSchedule::new("nobody", "a", "*/5 * * * *", JOB);
    assert!(matches!(
        store.create_schedule(&spec).await.unwrap_err(),
        StoreError::UnknownTenant(_)
    ));
    assert_eq!(count_schedules(&pool).await, 0, "nothing was written");

    // Six fields (seconds first) and a time zone are fine; names are unique per tenant.
    let mut spec = every("a", "*/10 * * * * *");
    spec.tz = "Europe/Paris".into();
    let created = store.create_schedule(&spec).await.unwrap();
    assert_eq!(created.tz, "Europe/Paris");
    let next = created.next_slot.expect("a next slot");
    assert_eq!(next.second() % 10, 0);
    assert!(next > db_now(&pool).await - TimeDelta::seconds(1));
    let err = message(store.create_schedule(&spec).await.unwrap_err());
    assert!(err.contains("already exists"), "{err}");
    let other = NewSchedule::new(OTHER_TENANT, "a", "*/10 * * * * *", JOB);
    store.create_schedule(&other).await.unwrap();
    assert_eq!(count_schedules(&pool).await, 2);
}

/// Three hosts (three pools) fire three seconds-granularity schedules at once while the
/// simulated clock runs 30 s ahead: every slot enqueues exactly one job.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn concurrent_firers_enqueue_exactly_one_job_per_slot(pool: PgPool) {
    let store = setup(&pool).await;
    let steps: [(&str, &str, u32); 3] = [
        ("each-second", "* * * * * *", 1),
        ("every-2s", "*/2 * * * * *", 2),
        ("every-3s", "*/3 * * * * *", 3),
    ];
    let mut firsts = Vec::new();
    for (name, cron, _) in steps {
        let mut spec = every(name, cron);
        spec.catch_up = CatchUp::All;
        spec.max_catch_up = 1000;
        firsts.push(
            store
                .create_schedule(&spec)
                .await
                .unwrap()
                .next_slot
                .unwrap(),
        );
    }
    let start = *firsts.iter().min().unwrap();
    let end = start + TimeDelta::seconds(30);

    let mut hosts = Vec::new();
    for host in 0..3 {
        let options = pool.connect_options().as_ref().clone();
        let host_pool = PgPoolOptions::new()
            .max_connections(2)
            .connect_with(options)
            .await
            .unwrap();
        let host_store = Store::new(host_pool);
        hosts.push(tokio::spawn(async move {
            let mut jobs = Vec::new();
            // Each host ticks every 100 ms of simulated time, offset from the others.
            let mut now = start - TimeDelta::milliseconds(100) + TimeDelta::milliseconds(host * 33);
            while now <= end {
                let report = host_store.fire_due_schedules_as_of(now, 2).await.unwrap();
                jobs.extend(report.job_ids);
                now += TimeDelta::milliseconds(100);
            }
            let report = host_store.fire_due_schedules_as_of(end, 10).await.unwrap();
            jobs.extend(report.job_ids);
            jobs
        }));
    }
    let mut all_jobs = Vec::new();
    for host in hosts {
        all_jobs.extend(host.await.unwrap());
    }
    let distinct: BTreeSet<i64> = all_jobs.iter().copied().collect();
    assert_eq!(distinct.len(), all_jobs.len(), "no job reported twice");

    let mut expected_total = 0;
    for ((name, _, step), first) in steps.iter().zip(&firsts) {
        let record = schedule(&store, name).await;
        let slots: Vec<DateTime<Utc>> = fired(&pool, record.id)
            .await
            .into_iter()
            .map(|(s, _)| s)
            .collect();
        // Every matching second in [first, end], computed without croner.
        let mut expected = Vec::new();
        let mut t = *first;
        while t <= end {
            if t.second() % step == 0 {
                expected.push(t);
            }
            t += TimeDelta::seconds(1);
        }
        assert_eq!(slots, expected, "{name}: one job per slot, none missing");
        assert_eq!(record.fired_count as usize, expected.len(), "{name}");
        assert_eq!(record.skipped_count, 0, "{name}");
        assert!(record.next_slot.unwrap() > end, "{name}");
        expected_total += expected.len();
    }
    assert_eq!(all_jobs.len(), expected_total);
    assert_eq!(count_jobs(&pool).await as usize, expected_total);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn catch_up_policies_after_downtime(pool: PgPool) {
    let store = setup(&pool).await;
    let mut ids = Vec::new();
    for (name, policy) in [
        ("none", CatchUp::None),
        ("latest", CatchUp::Latest),
        ("all", CatchUp::All),
    ] {
        let mut spec = every(name, "* * * * *");
        spec.catch_up = policy;
        spec.max_catch_up = 3;
        ids.push(store.create_schedule(&spec).await.unwrap());
    }
    let first = ids[0].next_slot.unwrap();
    assert!(ids.iter().all(|s| s.next_slot == Some(first)));
    let minute = |n: i64| first + TimeDelta::minutes(n);

    // Down for 10 minutes and 45 s: 11 slots due, the latest 45 s late.
    let report = store
        .fire_due_schedules_as_of(minute(10) + TimeDelta::seconds(45), 10)
        .await
        .unwrap();
    assert_eq!(report.schedules, 3);
    assert_eq!(report.job_ids.len(), 1 + 3);
    assert_eq!(report.skipped, 11 + 10 + 8);

    let none = schedule(&store, "none").await;
    assert_eq!((none.fired_count, none.skipped_count), (0, 11));
    assert!(fired(&pool, none.id).await.is_empty());
    let latest = schedule(&store, "latest").await;
    assert_eq!((latest.fired_count, latest.skipped_count), (1, 10));
    assert_eq!(
        fired(&pool, latest.id).await,
        vec![(minute(10), minute(10))]
    );
    assert_eq!(latest.last_fired_slot, Some(minute(10)));
    let all = schedule(&store, "all").await;
    assert_eq!((all.fired_count, all.skipped_count), (3, 8));
    let slots: Vec<_> = fired(&pool, all.id)
        .await
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    assert_eq!(slots, vec![minute(8), minute(9), minute(10)]);
    for s in [&none, &latest, &all] {
        assert_eq!(s.next_slot, Some(minute(11)), "{}", s.name);
    }

    // Back on time: a slot a second late fires under every policy, nothing is skipped.
    let report = store
        .fire_due_schedules_as_of(minute(11) + TimeDelta::seconds(1), 10)
        .await
        .unwrap();
    assert_eq!((report.job_ids.len(), report.skipped), (3, 0));
    assert_eq!(schedule(&store, "none").await.fired_count, 1);
    // Nothing more is due.
    let report = store
        .fire_due_schedules_as_of(minute(11) + TimeDelta::seconds(30), 10)
        .await
        .unwrap();
    assert_eq!((report.schedules, report.job_ids.len()), (0, 0));
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn jitter_spreads_run_at_within_the_window(pool: PgPool) {
    let store = setup(&pool).await;
    let mut spec = every("spread", "* * * * * *");
    spec.jitter = Duration::from_secs(30);
    spec.catch_up = CatchUp::All;
    spec.max_catch_up = 100;
    let created = store.create_schedule(&spec).await.unwrap();
    assert_eq!(created.jitter_ms, 30_000);
    let first = created.next_slot.unwrap();
    store
        .fire_due_schedules_as_of(first + TimeDelta::seconds(59), 10)
        .await
        .unwrap();
    let jobs = fired(&pool, created.id).await;
    assert_eq!(jobs.len(), 60);
    let offsets: BTreeSet<i64> = jobs
        .iter()
        .map(|(slot, run_at)| (*run_at - *slot).num_milliseconds())
        .collect();
    assert!(
        offsets.iter().all(|ms| (0..=30_000).contains(ms)),
        "{offsets:?}"
    );
    assert!(offsets.len() > 30, "offsets are spread: {offsets:?}");
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn pause_stops_firing_and_resume_starts_after_now(pool: PgPool) {
    let store = setup(&pool).await;
    let created = store
        .create_schedule(&every("tick", "* * * * * *"))
        .await
        .unwrap();
    let first = created.next_slot.unwrap();
    let paused = store.pause_schedule(TENANT, "tick").await.unwrap();
    assert!(paused.paused);
    let report = store
        .fire_due_schedules_as_of(first + TimeDelta::seconds(10), 10)
        .await
        .unwrap();
    assert_eq!((report.schedules, report.job_ids.len()), (0, 0));
    assert_eq!(store.next_schedule_due_in().await.unwrap(), None);
    assert_eq!(count_jobs(&pool).await, 0);

    // Resuming starts from the next slot after the database's now: paused slots are
    // neither run nor counted as missed.
    let before = db_now(&pool).await;
    let resumed = store.resume_schedule(TENANT, "tick").await.unwrap();
    assert!(!resumed.paused);
    assert!(resumed.next_slot.unwrap() > before);
    assert!(store.next_schedule_due_in().await.unwrap().unwrap() <= Duration::from_secs(1));
    let report = store
        .fire_due_schedules_as_of(resumed.next_slot.unwrap(), 10)
        .await
        .unwrap();
    assert_eq!((report.job_ids.len(), report.skipped), (1, 0));
    assert_eq!(schedule(&store, "tick").await.skipped_count, 0);

    let err = store.pause_schedule(TENANT, "nope").await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err}");
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn delete_removes_the_schedule_but_not_its_jobs(pool: PgPool) {
    let store = setup(&pool).await;
    let created = store
        .create_schedule(&every("tick", "* * * * * *"))
        .await
        .unwrap();
    let report = store
        .fire_due_schedules_as_of(created.next_slot.unwrap(), 10)
        .await
        .unwrap();
    assert_eq!(report.job_ids.len(), 1);
    store.delete_schedule(TENANT, "tick").await.unwrap();
    assert!(store.get_schedule(TENANT, "tick").await.unwrap().is_none());
    assert!(store.list_schedules(Some(TENANT)).await.unwrap().is_empty());
    let slots: i64 = sqlx::query_scalar("SELECT count(*) FROM sluice.schedule_slots")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(slots, 0);
    assert_eq!(count_jobs(&pool).await, 1, "the enqueued job stays");
    let err = store.delete_schedule(TENANT, "tick").await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err}");
    // The name is free again.
    store
        .create_schedule(&every("tick", "* * * * *"))
        .await
        .unwrap();
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_due_slot_notifies_and_a_missing_job_type_is_skipped(pool: PgPool) {
    let store = setup(&pool).await;
    let created = store
        .create_schedule(&every("tick", "* * * * * *"))
        .await
        .unwrap();
    let mut listener = store.listen().await.unwrap();
    // Make the first slot a second old in database time, then fire by the real clock.
    sqlx::query(
        "UPDATE sluice.schedules SET next_slot = date_trunc('second', now()) - interval '1 second'",
    )
    .execute(&pool)
    .await
    .unwrap();
    let report = store.fire_due_schedules(10).await.unwrap();
    assert!(!report.job_ids.is_empty());
    let notice = tokio::time::timeout(Duration::from_secs(10), listener.recv())
        .await
        .expect("a notification")
        .unwrap();
    assert_eq!(notice, Notice::JobsAvailable);
    claim_one(&store, "w").await;

    // The job type disappears: slots are skipped and the schedule says why.
    sqlx::query("DELETE FROM sluice.job_types WHERE tenant = $1 AND name = $2")
        .bind(TENANT)
        .bind(JOB)
        .execute(&pool)
        .await
        .unwrap();
    let before = schedule(&store, "tick").await;
    let next = before.next_slot.unwrap();
    let jobs_before = count_jobs(&pool).await;
    let report = store.fire_due_schedules_as_of(next, 10).await.unwrap();
    assert_eq!((report.job_ids.len(), report.skipped), (0, 1));
    assert_eq!(count_jobs(&pool).await, jobs_before);
    let record = schedule(&store, "tick").await;
    assert_eq!(record.id, created.id);
    assert!(record.last_error.unwrap().contains(JOB));
    assert_eq!(record.skipped_count, before.skipped_count + 1);
}
