//! One implementation of "→ pending" (migration 0011): the Rust enqueue,
//! `sluice.enqueue(...)` and the scheduler all insert through `sluice.enqueue_jobs(...)`,
//! so they check the same things and wake workers with the same notice.
//!
//! Owns: the behaviour the three paths now share. Sets up its own tenant and job type
//! with the public API only (no shared fixtures).

use std::time::Duration;

use sluice_store::{
    JobTypeSpec, NewComponent, NewJob, NewSchedule, Notice, RunAt, Store, TenantLimits,
};
use sqlx::PgPool;

const TENANT: &str = "solo";
const TYPE: &str = "tick";
const WITHIN: Duration = Duration::from_secs(10);

async fn store_with_type(pool: &PgPool) -> Store {
    let store = Store::new(pool.clone());
    store.create_tenant(TENANT).await.unwrap();
    let component = store
        .put_component(&NewComponent {
            tenant: TENANT.into(),
            name: "c".into(),
            version: None,
            bytes: b"\0asm".to_vec(),
            contract: 1,
        })
        .await
        .unwrap();
    store
        .set_job_type(&JobTypeSpec::new(TENANT, TYPE, component.id))
        .await
        .unwrap();
    store
}

/// The notice a delayed job sends, by whichever path it was enqueued.
async fn due_in(listener: &mut sluice_store::StoreListener) -> Duration {
    let notice = tokio::time::timeout(WITHIN, listener.recv())
        .await
        .expect("a notice")
        .unwrap();
    match notice {
        Notice::JobsDueIn(d) => d,
        other => panic!("expected JobsDueIn, got {other:?}"),
    }
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_delayed_job_announces_its_due_time_from_rust_and_from_sql(pool: PgPool) {
    let store = store_with_type(&pool).await;
    let mut listener = store.listen().await.unwrap();

    store
        .enqueue(
            &NewJob::new(TENANT, TYPE, "{}").with_run_at(RunAt::Delay(Duration::from_secs(120))),
        )
        .await
        .unwrap();
    let rust = due_in(&mut listener).await;
    assert!(
        rust > Duration::from_secs(110) && rust <= Duration::from_secs(120),
        "{rust:?}"
    );

    // Before migration 0011 the SQL function sent nothing for a delayed job.
    let _: i64 = sqlx::query_scalar(
        "SELECT sluice.enqueue(tenant => 'solo', job_type => 'tick', payload => '{}', \
         run_at => now() + interval '120 seconds')",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    let sql = due_in(&mut listener).await;
    assert!(
        sql > Duration::from_secs(110) && sql <= Duration::from_secs(120),
        "{sql:?}"
    );

    // A job due now is "available" from both.
    let _: i64 = sqlx::query_scalar(
        "SELECT sluice.enqueue(tenant => 'solo', job_type => 'tick', payload => '{}')",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    let notice = tokio::time::timeout(WITHIN, listener.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(notice, Notice::JobsAvailable);
}

/// A schedule's payload is held to the tenant's limit when its slot fires, as an
/// enqueue's is: a tenant whose limit was lowered below it gets skipped slots with the
/// reason, not an oversized job.
#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_slot_whose_payload_no_longer_fits_is_skipped_with_the_reason(pool: PgPool) {
    let store = store_with_type(&pool).await;
    let mut spec = NewSchedule::new(TENANT, "every-second", "* * * * * *", TYPE);
    spec.payload = br#"{"report": "daily"}"#.to_vec();
    let created = store.create_schedule(&spec).await.unwrap();
    store
        .set_tenant_limits(
            TENANT,
            &TenantLimits {
                max_payload_bytes: Some(4),
                ..TenantLimits::default()
            },
        )
        .await
        .unwrap();
    let slot = created.next_slot.unwrap();
    let report = store.fire_due_schedules_as_of(slot, 10).await.unwrap();
    assert_eq!((report.job_ids.len(), report.skipped), (0, 1), "{report:?}");
    let after = store
        .get_schedule(TENANT, "every-second")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after.skipped_count, 1);
    assert_eq!(after.fired_count, 0);
    let error = after.last_error.unwrap_or_default();
    assert!(
        error.contains("over the limit of 4 bytes"),
        "last_error says why: {error:?}"
    );
    let jobs: i64 = sqlx::query_scalar("SELECT count(*) FROM sluice.jobs")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(jobs, 0);

    // With the limit lifted the next slot fires, and clears the error.
    store
        .set_tenant_limits(TENANT, &TenantLimits::default())
        .await
        .unwrap();
    let next = after.next_slot.unwrap();
    let report = store.fire_due_schedules_as_of(next, 10).await.unwrap();
    assert_eq!(report.job_ids.len(), 1, "{report:?}");
    let fired = store
        .get_schedule(TENANT, "every-second")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(fired.last_error, None);
    let job = store.get(None, report.job_ids[0]).await.unwrap().unwrap();
    assert_eq!(job.payload, spec.payload);
    assert_eq!(job.max_attempts, 3, "the job type's attempts");
}

/// The structural half of the rule: no statement file inserts jobs itself, and of the
/// schema's functions only `sluice.enqueue_jobs` does -- and `sluice.webhook_enqueue`,
/// which inserts only deliveries of the reserved type `sluice.webhook`. That type has no
/// job_types row on purpose, so `enqueue_jobs` (every user-facing enqueue) refuses it and
/// no tenant can forge a delivery; its rows are checked by their join to the tenant's
/// endpoints, carry a fixed two-id payload and no idempotency key, and send the same
/// wake-up notice (migrations/0016_webhooks.sql).
#[test]
fn only_sluice_enqueue_jobs_inserts_jobs() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut stack = vec![dir.join("sql")];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let sql = std::fs::read_to_string(&path).unwrap().to_lowercase();
                assert!(
                    !sql.contains("insert into sluice.jobs"),
                    "{} inserts into sluice.jobs; go through sluice.enqueue_jobs(...)",
                    path.display()
                );
            }
        }
    }
    let schema = std::fs::read_to_string(dir.join("schema.sql"))
        .unwrap()
        .to_lowercase();
    let inserting: Vec<&str> = schema
        .split("create or replace function ")
        .skip(1)
        // A function's text ends at its closing quote (the comments section follows the
        // last one).
        .map(|f| f.split("$function$;").next().unwrap())
        .filter(|f| f.contains("insert into sluice.jobs"))
        .map(|f| f.split('(').next().unwrap())
        .collect();
    assert_eq!(inserting, ["sluice.enqueue_jobs", "sluice.webhook_enqueue"]);
}
