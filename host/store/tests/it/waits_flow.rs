//! Durable suspension and flow control (issues #43, #38): a waiting job of a concurrency
//! key holds no slot of its key, and waking it puts it back in its key's lane.

use sluice_store::{Completion, Suspended};
use sqlx::PgPool;

use crate::common::*;
use crate::flow::{per_key, set};
use crate::waits::{signal, suspension};

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
