//! Retention of concurrency keys: deletes the `sluice.flow_keys` rows of keys that have
//! gone idle (no job running or pending, a full token bucket), so a key used once does
//! not keep its row forever. Run by the retention pass (`maintenance`), in bounded
//! batches, each one short transaction of two statements: lock the candidates (`FOR
//! UPDATE SKIP LOCKED`), then delete those still idle, read in a snapshot taken after the
//! locks (the files say why that cannot lose an enqueue).
//!
//! Owns: the two statements. Must not: delete a key with a running or pending job, or
//! one whose bucket is not full (a new row starts full: the rate would be exceeded); hold
//! its locks across batches.

use crate::{Store, StoreError};

/// Step 1: lock up to `$2` idle-looking keys after id `$1`.
const LOCK_IDLE: &str = include_str!("../sql/retention/lock_idle_flow_keys.sql");
/// Step 2: delete the locked keys that are still idle, in a fresh snapshot.
const DELETE_IDLE: &str = include_str!("../sql/retention/delete_idle_flow_keys.sql");

impl Store {
    /// Deletes every idle concurrency key (see the module), `batch` keys per transaction
    /// (1..=100 000), walking the table once in id order. Returns how many rows went.
    #[tracing::instrument(name = "store.prune_flow_keys", level = "debug", skip_all)]
    pub async fn prune_flow_keys(&self, batch: u32) -> Result<u64, StoreError> {
        if batch == 0 || batch > 100_000 {
            return Err(StoreError::InvalidInput {
                field: "batch_size",
                message: format!("must be 1 to 100000, got {batch}"),
            });
        }
        let (mut after, mut deleted) = (0_i64, 0_u64);
        loop {
            let mut tx = self.pool.begin().await?;
            let locked: Vec<i64> = sqlx::query_scalar(LOCK_IDLE)
                .bind(after)
                .bind(i64::from(batch))
                .fetch_all(&mut *tx)
                .await?;
            let gone: Vec<i64> = if locked.is_empty() {
                Vec::new()
            } else {
                sqlx::query_scalar(DELETE_IDLE)
                    .bind(&locked)
                    .fetch_all(&mut *tx)
                    .await?
            };
            tx.commit().await?;
            deleted += gone.len() as u64;
            match locked.last() {
                Some(&last) if locked.len() == batch as usize => after = last,
                _ => return Ok(deleted),
            }
        }
    }
}
