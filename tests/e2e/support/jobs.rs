//! Jobs in a given state for the end-to-end tests. The factory is the store's
//! ([`Jobs`], `sluice_store::testkit`, shared with the store's own tests: through the
//! store's transitions, never a raw INSERT); [`Fixture::jobs`](super::Fixture::jobs)
//! gives one with the host's settings. Here: what the factory does not do, moving a
//! job's clock in SQL instead of waiting for it.

pub use sluice_store::testkit::Jobs;
use sqlx::PgPool;

/// Makes a running job's lease run out (moved in SQL rather than waited for): the next
/// `reap` returns it.
pub async fn expire_lease(pool: &PgPool, id: i64) {
    let moved = sqlx::query(
        "UPDATE sluice.jobs SET locked_until = now() - interval '1 second' \
         WHERE id = $1 AND state = 'running'",
    )
    .bind(id)
    .execute(pool)
    .await
    .unwrap()
    .rows_affected();
    assert_eq!(moved, 1, "job {id} is not running");
}
