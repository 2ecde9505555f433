//! Tenants: creation, listing and tenant-wide limits.
//!
//! Owns: every statement on `sluice.tenants`. Must not: enforce sandbox limits (it only
//! stores them; the worker applies them).

use chrono::{DateTime, Utc};

use crate::{Store, StoreError};

/// A tenant row. Limit fields are `None` when the host default applies.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow, serde::Serialize)]
pub struct TenantRecord {
    pub id: String,
    pub created_at: DateTime<Utc>,
    #[sqlx(flatten)]
    #[serde(flatten)]
    pub limits: TenantLimits,
}

/// Tenant-wide caps. `None` means "the host default applies". Only `max_payload_bytes`
/// is enforced by the store (at enqueue); the others are for the worker and sandbox.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, sqlx::FromRow, serde::Serialize, serde::Deserialize,
)]
pub struct TenantLimits {
    pub max_payload_bytes: Option<i32>,
    pub max_component_bytes: Option<i64>,
    pub max_timeout_ms: Option<i64>,
    pub max_fuel: Option<i64>,
    pub max_memory_bytes: Option<i64>,
    pub max_output_bytes: Option<i64>,
    pub max_log_bytes: Option<i64>,
}

impl TenantLimits {
    fn validate(&self) -> Result<(), StoreError> {
        let fields: [(&'static str, Option<i64>); 7] = [
            ("max_payload_bytes", self.max_payload_bytes.map(i64::from)),
            ("max_component_bytes", self.max_component_bytes),
            ("max_timeout_ms", self.max_timeout_ms),
            ("max_fuel", self.max_fuel),
            ("max_memory_bytes", self.max_memory_bytes),
            ("max_output_bytes", self.max_output_bytes),
            ("max_log_bytes", self.max_log_bytes),
        ];
        for (field, value) in fields {
            if let Some(v) = value
                && v <= 0
            {
                return Err(StoreError::InvalidInput {
                    field,
                    message: format!("{v} is not positive; use None for the host default"),
                });
            }
        }
        Ok(())
    }
}

macro_rules! tenant_columns {
    () => {
        "id, created_at, max_payload_bytes, max_component_bytes, max_timeout_ms, max_fuel, \
         max_memory_bytes, max_output_bytes, max_log_bytes"
    };
}

const GET_TENANT: &str = concat!(
    "SELECT ",
    tenant_columns!(),
    " FROM sluice.tenants WHERE id = $1"
);
const LIST_TENANTS: &str = concat!(
    "SELECT ",
    tenant_columns!(),
    " FROM sluice.tenants ORDER BY id"
);
const SET_TENANT_LIMITS: &str = concat!(
    "UPDATE sluice.tenants SET max_payload_bytes = $2, max_component_bytes = $3, \
     max_timeout_ms = $4, max_fuel = $5, max_memory_bytes = $6, max_output_bytes = $7, \
     max_log_bytes = $8 WHERE id = $1 RETURNING ",
    tenant_columns!()
);

/// Checks the tenant id format, `^[a-z0-9][a-z0-9_-]{0,62}$` (also a CHECK constraint).
pub(crate) fn validate_tenant_id(id: &str) -> Result<(), StoreError> {
    let bytes = id.as_bytes();
    let first_ok = bytes
        .first()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let rest_ok = bytes
        .iter()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_' || *b == b'-');
    if first_ok && rest_ok && bytes.len() <= 63 {
        Ok(())
    } else {
        Err(StoreError::InvalidInput {
            field: "tenant",
            message: format!(
                "{id:?} is not a tenant id: use 1 to 63 characters from a-z, 0-9, '_' and '-', starting with a letter or digit"
            ),
        })
    }
}

impl Store {
    /// Creates a tenant. Idempotent: creating an existing tenant changes nothing.
    pub async fn create_tenant(&self, id: &str) -> Result<(), StoreError> {
        validate_tenant_id(id)?;
        sqlx::query("INSERT INTO sluice.tenants (id) VALUES ($1) ON CONFLICT (id) DO NOTHING")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// One tenant, if it exists.
    pub async fn get_tenant(&self, id: &str) -> Result<Option<TenantRecord>, StoreError> {
        Ok(sqlx::query_as(GET_TENANT)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// All tenants, by id.
    pub async fn list_tenants(&self) -> Result<Vec<TenantRecord>, StoreError> {
        Ok(sqlx::query_as(LIST_TENANTS).fetch_all(&self.pool).await?)
    }

    /// Replaces the tenant's limits (all of them: `None` resets one to the host default).
    pub async fn set_tenant_limits(
        &self,
        id: &str,
        limits: &TenantLimits,
    ) -> Result<TenantRecord, StoreError> {
        limits.validate()?;
        sqlx::query_as(SET_TENANT_LIMITS)
            .bind(id)
            .bind(limits.max_payload_bytes)
            .bind(limits.max_component_bytes)
            .bind(limits.max_timeout_ms)
            .bind(limits.max_fuel)
            .bind(limits.max_memory_bytes)
            .bind(limits.max_output_bytes)
            .bind(limits.max_log_bytes)
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| StoreError::UnknownTenant(id.to_owned()))
    }
}
