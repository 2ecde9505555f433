//! Stats: counts per state and job type, the oldest ready job's age, lease expirations of
//! the last hour, and tenant scoping.

use std::time::Duration;

use sluice_store::{Completion, JobState, NewJob, Stats, TypeStats};
use sqlx::PgPool;

use crate::common::*;

fn row<'a>(stats: &'a Stats, tenant: &str, job_type: &str) -> &'a TypeStats {
    stats
        .types
        .iter()
        .find(|t| t.tenant == tenant && t.job_type == job_type)
        .unwrap_or_else(|| panic!("no row for {tenant}/{job_type} in {stats:#?}"))
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn stats_count_every_state_per_type_and_scope_to_the_tenant(pool: PgPool) {
    let store = setup(&pool).await;
    let empty = store.stats(Some(TENANT)).await.unwrap();
    assert_eq!(empty.totals.pending, 0);
    assert_eq!(empty.oldest_ready_age_seconds, None);
    assert_eq!(
        empty.types.len(),
        2,
        "registered types show with zeros: {empty:#?}"
    );
    assert!(row(&empty, TENANT, JOB).registered);

    // acme/send-email: completes one, one running, two ready, one delayed.
    jobs(&store)
        .worker("w1")
        .completed_with(
            job("a"),
            Completion {
                output: b"ok".to_vec(),
                fuel_used: Some(1),
                follow_ups: Vec::new(),
                log: None,
            },
        )
        .await;
    jobs(&store).worker("w1").running(job("b")).await;
    for payload in ["c", "d"] {
        jobs(&store).pending(job(payload)).await;
    }
    jobs(&store)
        .scheduled_in(job("later"), Duration::from_secs(3600))
        .await;
    // acme/charge-card: one dead.
    jobs(&store)
        .worker("w2")
        .dead(
            NewJob::new(TENANT, ONCE, "x").with_priority(30),
            "card declined",
        )
        .await;
    // globex: one ready job, invisible to acme's stats.
    jobs(&store)
        .pending(NewJob::new(OTHER_TENANT, JOB, "g"))
        .await;

    let stats = store.stats(Some(TENANT)).await.unwrap();
    assert_eq!(stats.tenant.as_deref(), Some(TENANT));
    let email = row(&stats, TENANT, JOB);
    assert_eq!(
        (
            email.counts.pending,
            email.counts.ready,
            email.counts.running,
            email.counts.completed,
            email.counts.dead
        ),
        (3, 2, 1, 1, 0),
        "{email:#?}"
    );
    let charge = row(&stats, TENANT, ONCE);
    assert_eq!((charge.counts.dead, charge.counts.pending), (1, 0));
    assert_eq!(stats.totals.dead, 1);
    assert_eq!(stats.totals.pending, 3);
    assert_eq!(stats.totals.get(JobState::Running), 1);
    assert!(
        stats.types.iter().all(|t| t.tenant == TENANT),
        "another tenant's rows leaked: {stats:#?}"
    );

    let all = store.stats(None).await.unwrap();
    assert_eq!(all.tenant, None);
    assert_eq!(row(&all, OTHER_TENANT, JOB).counts.ready, 1);
    assert_eq!(all.totals.pending, 4);

    // A type removed from the catalogue still shows while it has jobs, unregistered; one
    // without jobs disappears.
    for tenant in [TENANT, OTHER_TENANT] {
        sqlx::query("DELETE FROM sluice.job_types WHERE tenant = $1 AND name = $2")
            .bind(tenant)
            .bind(ONCE)
            .execute(&pool)
            .await
            .unwrap();
    }
    let all = store.stats(None).await.unwrap();
    assert!(
        !all.types
            .iter()
            .any(|t| t.tenant == OTHER_TENANT && t.job_type == ONCE)
    );
    let orphaned = row(&all, TENANT, ONCE);
    assert!(!orphaned.registered);
    assert_eq!(orphaned.counts.dead, 1);
    assert!(row(&all, OTHER_TENANT, JOB).registered);

    for unknown in ["nobody", "Not A Slug!"] {
        let none = store.stats(Some(unknown)).await.unwrap();
        assert!(none.types.is_empty(), "{none:#?}");
        assert_eq!(none.totals.pending, 0);
    }
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn stats_report_the_oldest_ready_age_and_recent_lease_expirations(pool: PgPool) {
    let store = setup(&pool).await;
    let old = store.enqueue(&job("old")).await.unwrap().id;
    store.enqueue(&job("new")).await.unwrap();
    sqlx::query("UPDATE sluice.jobs SET run_at = now() - interval '10 minutes' WHERE id = $1")
        .bind(old)
        .execute(&pool)
        .await
        .unwrap();
    let stats = store.stats(Some(TENANT)).await.unwrap();
    let age = stats.oldest_ready_age_seconds.expect("a ready job");
    assert!((600.0..3600.0).contains(&age), "age {age}");
    assert_eq!(row(&stats, TENANT, JOB).oldest_ready_age_seconds, Some(age));

    // Two expiries in the last hour, one two hours ago (moved back with SQL).
    for _ in 0..3 {
        let claimed = claim_one(&store, "doomed").await;
        expire_lease(&pool, claimed.id).await;
        assert_eq!(store.reap(10).await.unwrap().len(), 1);
    }
    sqlx::query(
        "UPDATE sluice.attempt_history SET finished_at = now() - interval '2 hours', \
         started_at = now() - interval '3 hours' \
         WHERE id = (SELECT min(id) FROM sluice.attempt_history WHERE outcome = 'lease_expired')",
    )
    .execute(&pool)
    .await
    .unwrap();
    let stats = store.stats(Some(TENANT)).await.unwrap();
    assert_eq!(stats.lease_expirations_last_hour, 2, "{stats:#?}");
    assert_eq!(row(&stats, TENANT, JOB).lease_expirations_last_hour, 2);
    assert_eq!(
        store
            .stats(Some(OTHER_TENANT))
            .await
            .unwrap()
            .lease_expirations_last_hour,
        0
    );
    // The oldest job was claimed each time; its third expiry was its last attempt.
    assert_eq!((stats.totals.dead, stats.totals.ready), (1, 1));
}
