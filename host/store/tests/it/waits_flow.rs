//! Durable suspension and flow control (issues #43, #38): a waiting job of a concurrency
//! key holds no slot of its key, and waking it puts it back in its key's lane; a type's
//! own snooze limit replaces the host's, and a snoozed job says it is held by its snooze.

use std::time::Duration;

use sluice_store::{Completion, FlowChange, Held, Suspended, Wake};
use sqlx::PgPool;

use crate::common::*;
use crate::flow::{per_key, set};
use crate::waits::{signal, suspension};

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_types_max_snoozes_replaces_the_hosts_and_a_snoozed_job_is_held_by_it(pool: PgPool) {
    let store = setup(&pool).await;
    let snooze = || {
        suspension(Wake::Snooze {
            delay: Duration::from_secs(60),
            max_snoozes: 25,
        })
    };
    let limit = |n: Option<u32>| FlowChange {
        max_snoozes: Some(n),
        ..FlowChange::default()
    };
    set(&store, limit(Some(1))).await;
    let record = store.get_job_type(TENANT, JOB).await.unwrap().unwrap();
    assert_eq!(record.flow.max_snoozes, Some(1));

    let claimed = jobs(&store).running(job("busy api")).await;
    assert_eq!(
        store.suspend(&claimed.lease, &snooze()).await.unwrap(),
        Suspended::Pending
    );
    let record = store.get(None, claimed.id).await.unwrap().unwrap();
    match &record.held {
        Some(Held::Snoozed { until }) => assert_eq!(*until, record.run_at),
        other => panic!("held by its snooze, not {other:?}"),
    }
    assert!(
        record
            .held
            .as_ref()
            .unwrap()
            .to_string()
            .starts_with("snoozed until "),
        "{:?}",
        record.held
    );
    make_due(&pool, claimed.id).await;
    let again = claim_one(&store, "w").await;
    assert_eq!(
        store.suspend(&again.lease, &snooze()).await.unwrap(),
        Suspended::SnoozeLimit { limit: 1 },
        "the type's 1, not the host's 25"
    );

    // Back to the host's default: the same job may snooze again.
    set(&store, limit(None)).await;
    assert_eq!(
        store.suspend(&again.lease, &snooze()).await.unwrap(),
        Suspended::Pending
    );
    // 0: a job of the type may not snooze at all.
    set(&store, limit(Some(0))).await;
    let other = jobs(&store).running(job("never snoozes")).await;
    assert_eq!(
        store.suspend(&other.lease, &snooze()).await.unwrap(),
        Suspended::SnoozeLimit { limit: 0 }
    );
    assert!(matches!(
        store.set_flow(TENANT, JOB, &limit(Some(u32::MAX))).await,
        Err(sluice_store::StoreError::InvalidInput {
            field: "max_snoozes",
            ..
        })
    ));
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_waiting_job_frees_its_keys_slot_and_takes_it_again_when_woken(pool: PgPool) {
    let store = setup(&pool).await;
    set(&store, per_key(1)).await;
    let keyed = |n: &str| job(n).with_concurrency_key("k");
    let first = store.enqueue(&keyed("first")).await.unwrap().id;
    let second = store.enqueue(&keyed("second")).await.unwrap().id;

    let claimed = store.claim(&claim_req("w", 10)).await.unwrap();
    assert_eq!(claimed.iter().map(|c| c.id).collect::<Vec<_>>(), [first]);
    let went = store
        .suspend(&claimed[0].lease, &suspension(signal("go")))
        .await
        .unwrap();
    assert_eq!(went, Suspended::Waiting);

    // The key's one slot is free: the second job runs while the first waits.
    let next = store.claim(&claim_req("w", 10)).await.unwrap();
    assert_eq!(next.iter().map(|c| c.id).collect::<Vec<_>>(), [second]);
    assert!(store.send_signal(None, first, "go", None).await.unwrap());
    assert!(
        store.claim(&claim_req("w", 10)).await.unwrap().is_empty(),
        "woken, but its key is at its cap"
    );
    store
        .complete(&next[0].lease, &Completion::default())
        .await
        .unwrap();
    let resumed = store.claim(&claim_req("w", 10)).await.unwrap();
    assert_eq!(
        resumed
            .iter()
            .map(|c| (c.id, c.attempt))
            .collect::<Vec<_>>(),
        [(first, 1)]
    );
}
