//! Signals and the waker (issue #43): `sluice.signal` in the application's transaction
//! wakes a job waiting for that name only when it commits; a signal sent before the
//! suspension makes it wake at once; `take_signal` is fenced, oldest first and the same
//! at the same sequence number; the waker wakes due timers, present signals and finished
//! children and leaves the rest; deleting jobs deletes their signals.

use std::time::Duration;

use sluice_store::{BulkAction, JobState, NewJob, RetentionPolicy, StoreError, Suspended, Wake};
use sqlx::PgPool;

use crate::common::*;
use crate::waits::{never, signal, suspension, waiting};

async fn signals_of(pool: &PgPool, id: i64) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM sluice.signals WHERE job_id = $1")
        .bind(id)
        .fetch_one(pool)
        .await
        .unwrap()
}

fn json(bytes: &[u8]) -> serde_json::Value {
    serde_json::from_slice(bytes).unwrap()
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_signal_wakes_its_waiting_job_only_when_its_transaction_commits(pool: PgPool) {
    let store = setup(&pool).await;
    let claimed = waiting(&store, signal("approve")).await;
    let record = store.get(None, claimed.id).await.unwrap().unwrap();
    assert_eq!(record.waiting_for.as_deref(), Some("approve"));
    assert_eq!(record.run_at, never());

    let send = "SELECT sluice.signal($1, 'approve', '{\"ok\": true}')";
    let mut tx = pool.begin().await.unwrap();
    let woke: bool = sqlx::query_scalar(send)
        .bind(claimed.id)
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert!(woke, "inside the transaction it wakes the job");
    tx.rollback().await.unwrap();
    let record = store.get(None, claimed.id).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Waiting, "rolled back: nothing sent");
    assert_eq!(signals_of(&pool, claimed.id).await, 0);
    assert!(store.claim(&claim_req("w", 10)).await.unwrap().is_empty());

    let mut tx = pool.begin().await.unwrap();
    let woke: bool = sqlx::query_scalar(send)
        .bind(claimed.id)
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert!(woke);
    let record = store.get(None, claimed.id).await.unwrap().unwrap();
    assert_eq!(
        (record.state, record.waiting_for),
        (JobState::Pending, None)
    );
    let resumed = claim_one(&store, "w").await;
    assert_eq!((resumed.id, resumed.attempt), (claimed.id, 1));
    let payload = store
        .take_signal(resumed.id, resumed.lease.token, "approve", 3)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(json(&payload), serde_json::json!({"ok": true}));
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_signal_of_another_name_is_kept_and_the_job_keeps_waiting(pool: PgPool) {
    let store = setup(&pool).await;
    let claimed = waiting(&store, signal("approve")).await;
    assert!(
        !store
            .send_signal(Some(TENANT), claimed.id, "reject", None)
            .await
            .unwrap()
    );
    assert_eq!(
        store.get(None, claimed.id).await.unwrap().unwrap().state,
        JobState::Waiting
    );
    assert_eq!(signals_of(&pool, claimed.id).await, 1);
    assert_eq!(store.wake_waiting(Duration::ZERO, 10).await.unwrap(), 0);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_signal_sent_before_the_await_makes_the_suspension_wake_at_once(pool: PgPool) {
    let store = setup(&pool).await;
    let claimed = jobs(&store).running(job("early")).await;
    let woke = store
        .send_signal(Some(TENANT), claimed.id, "approve", None)
        .await
        .unwrap();
    assert!(!woke, "a running job is not woken");
    assert_eq!(
        store
            .suspend(&claimed.lease, &suspension(signal("approve")))
            .await
            .unwrap(),
        Suspended::Pending
    );
    let resumed = claim_one(&store, "w").await;
    assert_eq!(resumed.id, claimed.id);
    let payload = store
        .take_signal(resumed.id, resumed.lease.token, "approve", 0)
        .await
        .unwrap();
    assert_eq!(
        payload.as_deref(),
        Some(&b"null"[..]),
        "sent without a payload"
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn take_signal_is_fenced_oldest_first_and_the_same_at_the_same_seq(pool: PgPool) {
    let store = setup(&pool).await;
    let claimed = jobs(&store).running(job("taker")).await;
    for n in 1..=2 {
        let payload = serde_json::json!({ "n": n });
        store
            .send_signal(None, claimed.id, "tick", Some(&payload))
            .await
            .unwrap();
    }
    let token = claimed.lease.token;
    let take = |seq| store.take_signal(claimed.id, token, "tick", seq);
    let n = |bytes: Option<Vec<u8>>| bytes.map(|b| json(&b)["n"].as_i64().unwrap());
    assert_eq!(n(take(4).await.unwrap()), Some(1), "oldest first");
    assert_eq!(
        n(take(4).await.unwrap()),
        Some(1),
        "the same at the same seq"
    );
    assert_eq!(n(take(9).await.unwrap()), Some(2));
    assert_eq!(n(take(4).await.unwrap()), Some(1));
    assert_eq!(take(10).await.unwrap(), None, "none left");
    assert_eq!(
        store
            .take_signal(claimed.id, token, "other", 10)
            .await
            .unwrap(),
        None
    );

    let stale = uuid::Uuid::new_v4();
    assert!(matches!(
        store.take_signal(claimed.id, stale, "tick", 11).await,
        Err(StoreError::LeaseLost { .. })
    ));
    // A new signal is not taken by a stale lease.
    store
        .send_signal(None, claimed.id, "tick", None)
        .await
        .unwrap();
    assert!(
        store
            .take_signal(claimed.id, stale, "tick", 11)
            .await
            .is_err()
    );
    assert_eq!(take(11).await.unwrap().as_deref(), Some(&b"null"[..]));
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn send_signal_refuses_bad_names_other_tenants_and_finished_jobs(pool: PgPool) {
    let store = setup(&pool).await;
    let claimed = waiting(&store, signal("approve")).await;
    let long = "x".repeat(129);
    for name in ["", long.as_str()] {
        assert!(matches!(
            store.send_signal(None, claimed.id, name, None).await,
            Err(StoreError::InvalidInput { field: "name", .. })
        ));
    }
    for (tenant, id) in [(Some(OTHER_TENANT), claimed.id), (None, claimed.id + 1000)] {
        assert!(matches!(
            store.send_signal(tenant, id, "approve", None).await,
            Err(StoreError::NotFound { entity: "job", .. })
        ));
    }
    let done = jobs(&store).completed(job("done")).await;
    let err = store
        .send_signal(None, done, "approve", None)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::IllegalTransition {
                state: JobState::Completed,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("completed"), "{err}");
    // The SQL function refuses the same, in SQL's words.
    let err = sqlx::query("SELECT sluice.signal($1, '')")
        .bind(claimed.id)
        .execute(&pool)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("invalid name"), "{err}");
    assert_eq!(signals_of(&pool, claimed.id).await, 0);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_signal_payload_over_the_tenants_payload_limit_is_refused(pool: PgPool) {
    let store = setup(&pool).await;
    let claimed = waiting(&store, signal("approve")).await;
    sqlx::query("UPDATE sluice.tenants SET max_payload_bytes = 64 WHERE id = $1")
        .bind(TENANT)
        .execute(&pool)
        .await
        .unwrap();
    let big = serde_json::json!({ "note": "x".repeat(100) });
    let err = store
        .send_signal(Some(TENANT), claimed.id, "approve", Some(&big))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::PayloadTooLarge {
                size: 112,
                limit: 64
            }
        ),
        "{err:?}"
    );
    // In SQL, the same limit; and without a tenant cap, the database's default.
    let send = "SELECT sluice.signal($1, 'approve', $2)";
    let err = sqlx::query(send)
        .bind(claimed.id)
        .bind(&big)
        .execute(&pool)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("signal payload is 112 bytes, over the limit of 64 bytes"),
        "{err}"
    );
    sqlx::query("UPDATE sluice.tenants SET max_payload_bytes = NULL WHERE id = $1")
        .bind(TENANT)
        .execute(&pool)
        .await
        .unwrap();
    let mut tx = pool.begin().await.unwrap();
    sqlx::query("SET LOCAL sluice.default_max_payload_bytes = 100")
        .execute(&mut *tx)
        .await
        .unwrap();
    let err = sqlx::query(send)
        .bind(claimed.id)
        .bind(&big)
        .execute(&mut *tx)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("over the limit of 100 bytes"),
        "{err}"
    );
    drop(tx);
    assert_eq!(signals_of(&pool, claimed.id).await, 0, "nothing was stored");
    let record = store.get(None, claimed.id).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Waiting, "nor woken");

    // Within the limit it is sent.
    let woke = store
        .send_signal(Some(TENANT), claimed.id, "approve", Some(&big))
        .await
        .unwrap();
    assert!(woke);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn the_waker_wakes_due_timers_present_signals_and_finished_children_only(pool: PgPool) {
    let store = setup(&pool).await;
    let now = db_now(&pool).await;
    let jobs = jobs(&store);
    let child = |n: &str| NewJob::new(TENANT, ONCE, n.as_bytes().to_vec());
    let (done_child, dead_child) = (
        jobs.pending(child("1")).await,
        jobs.pending(child("2")).await,
    );

    let timer_due = waiting(&store, Wake::At(now + chrono::Duration::seconds(30))).await;
    let timer_far = waiting(&store, Wake::At(now + chrono::Duration::hours(1))).await;
    let signalled = waiting(&store, signal("go")).await;
    let unsignalled = waiting(&store, signal("go")).await;
    let deadline = waiting(
        &store,
        Wake::Signal {
            name: "go".into(),
            deadline: Some(now + chrono::Duration::seconds(20)),
        },
    )
    .await;
    let children_done = waiting(
        &store,
        Wake::Jobs {
            ids: vec![done_child, dead_child],
        },
    )
    .await;
    let running_child = jobs.pending(child("3")).await;
    let children_busy = waiting(
        &store,
        Wake::Jobs {
            ids: vec![done_child, running_child],
        },
    )
    .await;
    // The first two children finish (one completed, one dead) after their parent waits.
    let mut kids = store.claim(&claim_req("kid", 2)).await.unwrap();
    kids.sort_by_key(|k| k.id);
    assert_eq!(
        kids.iter().map(|k| k.id).collect::<Vec<_>>(),
        [done_child, dead_child]
    );
    store
        .complete(&kids[0].lease, &Default::default())
        .await
        .unwrap();
    store
        .fail(&kids[1].lease, &sluice_store::Failure::fatal("boom"))
        .await
        .unwrap();
    assert_eq!(
        store
            .get(None, children_done.id)
            .await
            .unwrap()
            .unwrap()
            .state,
        JobState::Waiting,
        "nothing but the waker wakes a parent yet"
    );
    // A signal committed while the job was suspending: stored, the job not woken.
    sqlx::query("INSERT INTO sluice.signals (job_id, name) VALUES ($1, 'go')")
        .bind(signalled.id)
        .execute(&pool)
        .await
        .unwrap();

    let woken = store
        .wake_waiting(Duration::from_secs(60), 100)
        .await
        .unwrap();
    assert_eq!(woken, 4);
    let state = |id| {
        let store = &store;
        async move { store.get(None, id).await.unwrap().unwrap() }
    };
    for (job, expected) in [
        (&timer_due, JobState::Pending),
        (&timer_far, JobState::Waiting),
        (&signalled, JobState::Pending),
        (&unsignalled, JobState::Waiting),
        (&deadline, JobState::Pending),
        (&children_done, JobState::Pending),
        (&children_busy, JobState::Waiting),
    ] {
        let record = state(job.id).await;
        assert_eq!(record.state, expected, "job {}", job.id);
        if expected == JobState::Pending {
            assert_eq!((record.waiting_for, record.awaited), (None, None));
        }
    }
    assert_eq!(
        state(timer_due.id).await.run_at,
        now + chrono::Duration::seconds(30),
        "a timer keeps its instant"
    );
    assert!(state(signalled.id).await.run_at <= db_now(&pool).await);
    assert_eq!(
        state(children_busy.id).await.awaited,
        Some(vec![done_child, running_child])
    );

    // The busy child is cancelled: its parent wakes on the next round.
    store.cancel(None, running_child).await.unwrap();
    assert_eq!(store.wake_waiting(Duration::ZERO, 100).await.unwrap(), 1);
    assert_eq!(state(children_busy.id).await.state, JobState::Pending);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn awaiting_finished_jobs_or_a_passed_instant_does_not_wait(pool: PgPool) {
    let store = setup(&pool).await;
    let done = jobs(&store)
        .completed(NewJob::new(TENANT, ONCE, b"1".to_vec()))
        .await;
    let now = db_now(&pool).await;
    for wake in [
        Wake::Jobs { ids: vec![done] },
        Wake::Jobs { ids: Vec::new() },
        Wake::At(now - chrono::Duration::seconds(1)),
    ] {
        let claimed = jobs(&store).running(job("quick")).await;
        let went = store
            .suspend(&claimed.lease, &suspension(wake.clone()))
            .await;
        assert_eq!(went.unwrap(), Suspended::Pending, "{wake:?}");
        let resumed = claim_one(&store, "w").await;
        assert_eq!((resumed.id, resumed.attempt), (claimed.id, 1));
        store
            .complete(&resumed.lease, &Default::default())
            .await
            .unwrap();
    }
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn deleting_jobs_deletes_their_signals(pool: PgPool) {
    let store = setup(&pool).await;
    let waiter = waiting(&store, signal("approve")).await;
    store
        .send_signal(None, waiter.id, "other", None)
        .await
        .unwrap();
    let finished = jobs(&store).running(job("finisher")).await;
    store
        .send_signal(None, finished.id, "x", None)
        .await
        .unwrap();
    store
        .complete(&finished.lease, &Default::default())
        .await
        .unwrap();
    let kept = jobs(&store).running(job("kept")).await;
    store.send_signal(None, kept.id, "x", None).await.unwrap();

    let outcome = store
        .bulk_jobs(TENANT, BulkAction::Delete, &[waiter.id])
        .await
        .unwrap();
    assert_eq!(outcome.changed, 1);
    assert_eq!(signals_of(&pool, waiter.id).await, 0);

    finished_ago(&pool, &[finished.id], "4 days").await;
    let report = store.prune(&RetentionPolicy::default()).await.unwrap();
    assert_eq!(report.completed, 1);
    assert_eq!(signals_of(&pool, finished.id).await, 0);
    assert_eq!(
        signals_of(&pool, kept.id).await,
        1,
        "another job's signal stays"
    );
}
