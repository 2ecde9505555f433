//! Whether the database's schema is the one this binary was built for.
//!
//! Owns: comparing the migrations recorded in `_sqlx_migrations` with [`crate::MIGRATOR`].
//! Must not: apply or undo migrations (`Store::migrate` applies them); a long-running
//! process (worker, HTTP server) calls this once at start so a skipped `sluice migrate`
//! or an old binary beside a newer schema stops with a clear message instead of failing
//! every statement.

use crate::{MIGRATOR, Store, StoreError};

const MIGRATIONS_TABLE: &str = include_str!("../sql/schema/migrations_table.sql");
const LATEST_VERSION: &str = include_str!("../sql/schema/latest_version.sql");

impl Store {
    /// `Ok` when every migration this binary knows is applied and the database has none
    /// it does not know; otherwise `StoreError::SchemaMismatch` naming both versions.
    pub async fn check_schema(&self) -> Result<(), StoreError> {
        let binary = MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0);
        let table: Option<String> = sqlx::query_scalar(MIGRATIONS_TABLE)
            .fetch_one(&self.pool)
            .await?;
        let database: Option<i64> = match table {
            None => None,
            Some(_) => {
                sqlx::query_scalar(LATEST_VERSION)
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
