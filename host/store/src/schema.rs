//! Whether the database's schema is the one this binary was built for.
//!
//! Owns: comparing the migrations recorded in `_sqlx_migrations` with [`crate::MIGRATOR`].
//! Must not: apply or undo migrations (`Store::migrate` applies them); a long-running
//! process (worker, HTTP server) calls this once at start so a skipped `sluice migrate`
//! or an old binary beside a newer schema stops with a clear message instead of failing
//! every statement.

use crate::{MIGRATOR, Store, StoreError};

impl Store {
    /// `Ok` when every migration this binary knows is applied and the database has none
    /// it does not know; otherwise `StoreError::SchemaMismatch` naming both versions.
    pub async fn check_schema(&self) -> Result<(), StoreError> {
        let binary = MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0);
        let table: Option<String> =
            sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations')::text")
                .fetch_one(&self.pool)
                .await?;
        let database: Option<i64> = match table {
            None => None,
            Some(_) => {
                sqlx::query_scalar("SELECT max(version) FROM _sqlx_migrations WHERE success")
                    .fetch_one(&self.pool)
                    .await?
            }
        };
        match database {
            Some(database) if database == binary => Ok(()),
            database => Err(StoreError::SchemaMismatch { database, binary }),
        }
    }
}
