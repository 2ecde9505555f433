//! Tenants: creation, listing and tenant-wide limits.
//!
//! Owns: every statement on `sluice.tenants`, and the checks of a job type or a component
//! against the tenant's caps ([`TenantLimits::check_job_type`],
//! [`TenantLimits::component_limit`]). Must not: enforce sandbox limits at run time (it
//! only stores them; the worker applies them) or rate-limit (the HTTP layer's token
//! bucket reads `max_enqueue_per_sec`).

use chrono::{DateTime, Utc};

use crate::validate::{check_allow_list, validate_tenant_id};
use crate::{JobTypeSpec, Store, StoreError, text};

/// A tenant row. Limit fields are `None` when the host default applies.
#[derive(Clone, Debug, PartialEq, sqlx::FromRow)]
pub struct TenantRecord {
    /// The tenant id: a lowercase slug of 1 to 63 characters (`acme`, `team-7`).
    pub id: String,
    /// When the tenant was created.
    pub created_at: DateTime<Utc>,
    /// Its caps (columns of `sluice.tenants`).
    #[sqlx(flatten)]
    pub limits: TenantLimits,
    /// The operator's bound on what this tenant's job types may be granted over HTTP
    /// (normalised entries); `None`: no bound beyond the host's deny list.
    pub egress_allow: Option<Vec<String>>,
    /// The claim leaves a paused tenant's jobs pending (docs/flow-control.md).
    pub paused: bool,
}

/// Tenant-wide caps. `None` means "the host default applies". `max_payload_bytes` is
/// enforced by the store at enqueue; `max_timeout_ms`, `max_fuel` and `max_memory_bytes`
/// when a job type is set ([`Store::set_job_type_within_limits`]);
/// `max_component_bytes` at upload; `max_enqueue_per_sec` / `enqueue_burst` by the HTTP
/// API's token bucket; the daily quotas (`*_per_day`: `None` is no quota, there is no
/// host default) by the claim (migration 0033); the rest by the worker and sandbox.
#[derive(Clone, Debug, Default, PartialEq, sqlx::FromRow, serde::Deserialize)]
pub struct TenantLimits {
    /// Largest job payload, in bytes (checked at enqueue).
    pub max_payload_bytes: Option<i32>,
    /// Largest component upload, in bytes.
    pub max_component_bytes: Option<i64>,
    /// Cap on a job type's timeout per attempt, in milliseconds; also bounds a type that
    /// sets none.
    pub max_timeout_ms: Option<i64>,
    /// Cap on a job type's fuel per attempt.
    pub max_fuel: Option<i64>,
    /// Cap on a job type's memory per attempt, in bytes.
    pub max_memory_bytes: Option<i64>,
    /// Cap on an attempt's output, in bytes (applied by the worker).
    pub max_output_bytes: Option<i64>,
    /// Cap on the log bytes kept per attempt (applied by the worker).
    pub max_log_bytes: Option<i64>,
    /// Jobs per second the HTTP API accepts for this tenant (token bucket refill rate).
    pub max_enqueue_per_sec: Option<f64>,
    /// Bucket size: jobs accepted at once after a quiet period (default: one second's
    /// worth of `max_enqueue_per_sec`, at least 1).
    pub enqueue_burst: Option<i32>,
    /// Outbound requests one attempt may start.
    pub max_http_requests: Option<i32>,
    /// Request body bytes per outbound request.
    pub max_http_request_bytes: Option<i64>,
    /// Response body bytes per outbound request.
    pub max_http_response_bytes: Option<i64>,
    /// Follow-up jobs one attempt may enqueue.
    pub max_follow_ups: Option<i32>,
    /// Payload bytes of one attempt's follow-up jobs together.
    pub max_follow_up_bytes: Option<i64>,
    /// Cap on one durable job's journal, in bytes (a type's `journal_bytes` above it is
    /// refused; applied by the worker).
    pub max_journal_bytes: Option<i64>,
    /// Runs the tenant's jobs may start per day (UTC); past it they stay pending.
    pub max_attempts_per_day: Option<i64>,
    /// Fuel the tenant's runs may burn per day (UTC); past it its jobs stay pending.
    pub max_fuel_per_day: Option<i64>,
    /// Outbound HTTP body bytes (sent and received) per day (UTC); past it the tenant's
    /// jobs stay pending.
    pub max_egress_bytes_per_day: Option<i64>,
}

impl TenantLimits {
    fn validate(&self) -> Result<(), StoreError> {
        for (field, value) in [
            ("max_http_requests", self.max_http_requests),
            ("max_follow_ups", self.max_follow_ups),
        ] {
            if let Some(n) = value
                && n < 0
            {
                return Err(StoreError::InvalidInput {
                    field,
                    message: format!(
                        "{n} is negative; use 0 for none, or None for the host default"
                    ),
                });
            }
        }
        let fields: [(&'static str, Option<i64>); 14] = [
            ("max_payload_bytes", self.max_payload_bytes.map(i64::from)),
            ("max_component_bytes", self.max_component_bytes),
            ("max_timeout_ms", self.max_timeout_ms),
            ("max_fuel", self.max_fuel),
            ("max_memory_bytes", self.max_memory_bytes),
            ("max_output_bytes", self.max_output_bytes),
            ("max_log_bytes", self.max_log_bytes),
            ("max_http_request_bytes", self.max_http_request_bytes),
            ("max_http_response_bytes", self.max_http_response_bytes),
            ("max_follow_up_bytes", self.max_follow_up_bytes),
            ("max_journal_bytes", self.max_journal_bytes),
            ("max_attempts_per_day", self.max_attempts_per_day),
            ("max_fuel_per_day", self.max_fuel_per_day),
            ("max_egress_bytes_per_day", self.max_egress_bytes_per_day),
        ];
        for (field, value) in fields {
            if let Some(v) = value
                && v <= 0
            {
                return Err(StoreError::InvalidInput {
                    field,
                    message: format!(
                        "{v} is not positive: a cap is at least 1, or unset for the host \
                         default (`--unset` in the CLI, null over HTTP)"
                    ),
                });
            }
        }
        if let Some(rate) = self.max_enqueue_per_sec
            && !(rate.is_finite() && rate > 0.0)
        {
            return Err(StoreError::InvalidInput {
                field: "max_enqueue_per_sec",
                message: format!(
                    "{rate} is not a positive rate: set one above 0, or unset it for no \
                     limit (`--unset` in the CLI, null over HTTP)"
                ),
            });
        }
        if let Some(burst) = self.enqueue_burst
            && burst <= 0
        {
            return Err(StoreError::InvalidInput {
                field: "enqueue_burst",
                message: format!(
                    "{burst} is not positive: set one above 0, or unset it for one \
                     second's worth (`--unset` in the CLI, null over HTTP)"
                ),
            });
        }
        Ok(())
    }

    /// Refuses a job type whose per-attempt fuel, memory, timeout, HTTP limits or journal
    /// cap is above this tenant's cap; the error names the cap and both figures. Unset type limits (host
    /// defaults) are capped by the worker instead.
    pub fn check_job_type(&self, spec: &JobTypeSpec) -> Result<(), StoreError> {
        if let (Some(t), Some(cap)) = (spec.timeout, self.max_timeout_ms)
            && t.is_zero()
        {
            return Err(StoreError::InvalidInput {
                field: "timeout",
                message: format!(
                    "0 (no timeout) is above tenant {:?}'s cap max_timeout_ms = {cap} ms; \
                     give a timeout of at most {cap} ms",
                    spec.tenant
                ),
            });
        }
        let timeout_ms = spec
            .timeout
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let as_i64 = |v: Option<u64>| v.map(|v| i64::try_from(v).unwrap_or(i64::MAX));
        let check = |field: &'static str,
                     cap_name: &str,
                     value: Option<i64>,
                     cap: Option<i64>,
                     unit: &str| {
            match (value, cap) {
                (Some(value), Some(cap)) if value > cap => Err(StoreError::InvalidInput {
                    field,
                    message: format!(
                        "{value}{unit} is above tenant {:?}'s cap {cap_name} = {cap}{unit}; \
                         ask an operator to raise it (sluice tenants limits) or lower the type's limit",
                        spec.tenant
                    ),
                }),
                _ => Ok(()),
            }
        };
        check(
            "timeout",
            "max_timeout_ms",
            timeout_ms,
            self.max_timeout_ms,
            " ms",
        )?;
        check("fuel", "max_fuel", as_i64(spec.fuel), self.max_fuel, "")?;
        check(
            "memory_bytes",
            "max_memory_bytes",
            as_i64(spec.memory_bytes),
            self.max_memory_bytes,
            " bytes",
        )?;
        check(
            "http_max_requests",
            "max_http_requests",
            spec.http.max_requests.map(i64::from),
            self.max_http_requests.map(i64::from),
            "",
        )?;
        check(
            "http_request_bytes",
            "max_http_request_bytes",
            as_i64(spec.http.request_bytes),
            self.max_http_request_bytes,
            " bytes",
        )?;
        check(
            "http_response_bytes",
            "max_http_response_bytes",
            as_i64(spec.http.response_bytes),
            self.max_http_response_bytes,
            " bytes",
        )?;
        check(
            "journal_bytes",
            "max_journal_bytes",
            as_i64(spec.journal_bytes),
            self.max_journal_bytes,
            " bytes",
        )?;
        Ok(())
    }

    /// The largest component this tenant may upload: its `max_component_bytes`, or
    /// `host_default` when unset.
    pub fn component_limit(&self, host_default: u64) -> u64 {
        self.max_component_bytes
            .and_then(|v| u64::try_from(v).ok())
            .unwrap_or(host_default)
    }
}

const CREATE_TENANT: &str = include_str!("../sql/tenants/create.sql");
const GET_TENANT: &str = include_str!("../sql/tenants/get.sql");
const LIST_TENANTS: &str = include_str!("../sql/tenants/list.sql");
const SET_TENANT_LIMITS: &str = include_str!("../sql/tenants/set_limits.sql");
const SET_TENANT_EGRESS: &str = include_str!("../sql/tenants/set_egress.sql");

impl Store {
    /// Creates a tenant. Idempotent: creating an existing tenant changes nothing.
    pub async fn create_tenant(&self, id: &str) -> Result<(), StoreError> {
        validate_tenant_id(id)?;
        sqlx::query(CREATE_TENANT)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// One tenant, if it exists.
    pub async fn get_tenant(&self, id: &str) -> Result<Option<TenantRecord>, StoreError> {
        if !text::findable(id) {
            return Ok(None);
        }
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
            .bind(text::lossy(id).as_ref())
            .bind(limits.max_payload_bytes)
            .bind(limits.max_component_bytes)
            .bind(limits.max_timeout_ms)
            .bind(limits.max_fuel)
            .bind(limits.max_memory_bytes)
            .bind(limits.max_output_bytes)
            .bind(limits.max_log_bytes)
            .bind(limits.max_enqueue_per_sec)
            .bind(limits.enqueue_burst)
            .bind(limits.max_http_requests)
            .bind(limits.max_http_request_bytes)
            .bind(limits.max_http_response_bytes)
            .bind(limits.max_follow_ups)
            .bind(limits.max_follow_up_bytes)
            .bind(limits.max_journal_bytes)
            .bind(limits.max_attempts_per_day)
            .bind(limits.max_fuel_per_day)
            .bind(limits.max_egress_bytes_per_day)
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| StoreError::UnknownTenant(id.to_owned()))
    }
}

impl Store {
    /// Replaces the operator's bound on what the tenant's job types may be granted over
    /// HTTP (`None`: no bound). The entries must already be parsed and normalised by the
    /// host (`sluice_egress::AllowList`); the store checks their count and text only.
    /// Job types already granted more keep their rows, but the worker grants only what
    /// is inside the bound (docs/egress.md).
    pub async fn set_tenant_egress(
        &self,
        id: &str,
        allow: Option<&[String]>,
    ) -> Result<TenantRecord, StoreError> {
        if let Some(entries) = allow {
            check_allow_list("egress_allow", entries)?;
        }
        sqlx::query_as(SET_TENANT_EGRESS)
            .bind(text::lossy(id).as_ref())
            .bind(allow)
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| StoreError::UnknownTenant(id.to_owned()))
    }

    /// [`Store::set_job_type`] after checking the type against the tenant's caps
    /// ([`TenantLimits::check_job_type`]): a type above a cap is refused and nothing is
    /// written. The host's CLI and API go through `sluice::grants::set_job_type`, which
    /// also checks the HTTP allow list against the tenant's bound with the same read.
    pub async fn set_job_type_within_limits(
        &self,
        spec: &JobTypeSpec,
    ) -> Result<crate::JobTypeRecord, StoreError> {
        validate_tenant_id(&spec.tenant)
            .map_err(|_| StoreError::UnknownTenant(spec.tenant.clone()))?;
        let tenant = self
            .get_tenant(&spec.tenant)
            .await?
            .ok_or_else(|| StoreError::UnknownTenant(spec.tenant.clone()))?;
        tenant.limits.check_job_type(spec)?;
        self.set_job_type(spec).await
    }
}
