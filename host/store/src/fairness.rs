//! Fairness between tenants: the per-tenant cap on running jobs, fleet-wide.
//!
//! Owns: the `max_running` column of `sluice.tenants`. The cap is enforced by the claim
//! (`sluice.claim(...)`, migrations/0007_fair_claims.sql; see `lease.rs`), which also
//! interleaves tenants; this module only sets and reads it.
//! Must not: count running jobs in Rust (the claim counts them in SQL, under a lock).

use crate::{Store, StoreError, text};

const SET_MAX_RUNNING: &str = include_str!("../sql/tenants/set_max_running.sql");
const GET_MAX_RUNNING: &str = include_str!("../sql/tenants/get_max_running.sql");

impl Store {
    /// Caps how many of `tenant`'s jobs run at once across every worker (`None`: no cap).
    pub async fn set_tenant_max_running(
        &self,
        tenant: &str,
        max_running: Option<u32>,
    ) -> Result<(), StoreError> {
        let cap = match max_running {
            Some(0) => {
                return Err(StoreError::InvalidInput {
                    field: "max_running",
                    message: "must be at least 1 (pause work by other means; None lifts the cap)"
                        .into(),
                });
            }
            Some(n) => Some(i32::try_from(n).map_err(|_| StoreError::InvalidInput {
                field: "max_running",
                message: format!("{n} is too large"),
            })?),
            None => None,
        };
        let done = sqlx::query(SET_MAX_RUNNING)
            .bind(text::lossy(tenant).as_ref()) // tenant ids are slugs: U+FFFD matches none
            .bind(cap)
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::UnknownTenant(tenant.into()));
        }
        Ok(())
    }

    /// The tenant's cap on running jobs (`None`: no cap).
    pub async fn tenant_max_running(&self, tenant: &str) -> Result<Option<u32>, StoreError> {
        let row: Option<(Option<i32>,)> = sqlx::query_as(GET_MAX_RUNNING)
            .bind(text::lossy(tenant).as_ref()) // tenant ids are slugs: U+FFFD matches none
            .fetch_optional(&self.pool)
            .await?;
        match row {
            None => Err(StoreError::UnknownTenant(tenant.into())),
            Some((cap,)) => Ok(cap.map(|n| n as u32)),
        }
    }
}
