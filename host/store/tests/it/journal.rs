//! The journal of durable jobs (migration 0023): the append is fenced by the attempt's
//! lease and capped, the first append pins the component, the next attempt loads what
//! was appended, a tenant reads only its own, and retention deletes it with the job.

use sluice_store::{AppendError, JournalEntry, RetentionPolicy};
use sqlx::PgPool;

use crate::common::*;

fn entry(seq: i32, kind: &str, result: &[u8]) -> JournalEntry {
    JournalEntry {
        seq,
        kind: kind.into(),
        request: format!("req-{seq}"),
        summary: format!("{} bytes", result.len()),
        result: result.to_vec(),
    }
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_stale_attempt_appends_nothing_and_the_next_one_loads_what_the_live_one_did(
    pool: PgPool,
) {
    let store = setup(&pool).await;
    let first = jobs(&store).worker("w1").running(job("durable")).await;
    let id = first.id;
    store
        .append_journal(
            id,
            first.lease.token,
            7,
            1 << 20,
            &[entry(0, "random", b"abcd")],
        )
        .await
        .unwrap();
    store
        .append_journal(
            id,
            first.lease.token,
            8,
            1 << 20,
            &[entry(1, "http", b"200")],
        )
        .await
        .unwrap();

    // The lease expires and the reaper hands the job back: the first attempt is stale.
    sqlx::query("UPDATE sluice.jobs SET locked_until = now() - interval '1 second' WHERE id = $1")
        .bind(id)
        .execute(&pool)
        .await
        .unwrap();
    store.reap(100).await.unwrap();
    let stale = store
        .append_journal(
            id,
            first.lease.token,
            7,
            1 << 20,
            &[entry(2, "http", b"late")],
        )
        .await;
    assert!(
        matches!(stale, Err(AppendError::LeaseLost(j)) if j == id),
        "{stale:?}"
    );

    let loaded = store.load_journal(id).await.unwrap();
    assert_eq!(
        loaded.component_id,
        Some(7),
        "the first append pins the component"
    );
    assert_eq!(
        loaded.entries,
        vec![entry(0, "random", b"abcd"), entry(1, "http", b"200")],
        "the stale append left nothing"
    );

    // A tenant reads its own job's journal, another tenant nothing.
    let mine = store.journal(Some(TENANT), id).await.unwrap();
    assert_eq!(mine.iter().map(|r| r.seq).collect::<Vec<_>>(), [0, 1]);
    assert!(mine.iter().all(|r| r.attempt == 1));
    assert!(
        store
            .journal(Some(OTHER_TENANT), id)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .load_journal(id + 1000)
            .await
            .unwrap()
            .component_id
            .is_none()
    );
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn a_failed_attempt_gives_back_the_tail_under_its_lease_only(pool: PgPool) {
    let store = setup(&pool).await;
    let running = jobs(&store).worker("w").running(job("tail")).await;
    let entries = [
        entry(0, "random", b"a"),
        entry(1, "http", b"500"),
        entry(2, "random", b"b"),
    ];
    store
        .append_journal(running.id, running.lease.token, 1, 1 << 20, &entries)
        .await
        .unwrap();
    let stale = store
        .truncate_journal(running.id, uuid::Uuid::new_v4(), 1)
        .await;
    assert!(matches!(stale, Err(AppendError::LeaseLost(_))), "{stale:?}");
    assert_eq!(
        store.load_journal(running.id).await.unwrap().entries.len(),
        3
    );
    store
        .truncate_journal(running.id, running.lease.token, 1)
        .await
        .unwrap();
    let loaded = store.load_journal(running.id).await.unwrap();
    assert_eq!(loaded.entries, [entry(0, "random", b"a")]);
    let one = &entries[0];
    let size = (one.kind.len() + one.request.len() + one.summary.len() + one.result.len()) as i64;
    assert_eq!(loaded.bytes, size, "the head counts what is left");
    // The next append continues after what is left.
    store
        .append_journal(
            running.id,
            running.lease.token,
            1,
            1 << 20,
            &[entry(1, "http", b"200")],
        )
        .await
        .unwrap();
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn an_append_past_the_cap_writes_nothing_and_says_so(pool: PgPool) {
    let store = setup(&pool).await;
    let running = jobs(&store).worker("w").running(job("capped")).await;
    let one = entry(0, "random", &[0; 40]);
    let size = (one.kind.len() + one.request.len() + one.summary.len() + one.result.len()) as i64;
    store
        .append_journal(
            running.id,
            running.lease.token,
            1,
            size,
            std::slice::from_ref(&one),
        )
        .await
        .unwrap();
    let over = store
        .append_journal(
            running.id,
            running.lease.token,
            1,
            size,
            &[entry(1, "random", b"x")],
        )
        .await;
    match over {
        Err(AppendError::OverCap { bytes, cap }) => {
            assert_eq!(cap, size);
            assert!(bytes > size, "{bytes}");
        }
        other => panic!("expected over the cap, got {other:?}"),
    }
    assert_eq!(store.load_journal(running.id).await.unwrap().entries, [one]);
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn retention_deletes_the_journal_with_its_job(pool: PgPool) {
    let store = setup(&pool).await;
    let running = jobs(&store).worker("w").running(job("kept")).await;
    store
        .append_journal(
            running.id,
            running.lease.token,
            1,
            1 << 20,
            &[entry(0, "random", b"r")],
        )
        .await
        .unwrap();
    store
        .complete(&running.lease, &Default::default())
        .await
        .unwrap();
    sqlx::query("UPDATE sluice.jobs SET finished_at = now() - interval '30 days' WHERE id = $1")
        .bind(running.id)
        .execute(&pool)
        .await
        .unwrap();
    store.prune(&RetentionPolicy::default()).await.unwrap();
    let left: (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM sluice.journal WHERE job_id = $1), \
                (SELECT count(*) FROM sluice.journal_heads WHERE job_id = $1)",
    )
    .bind(running.id)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(left, (0, 0));
}
