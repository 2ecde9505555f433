//! Job types: which component a job type runs, its default attempts, backoff and limits.
//!
//! Owns: every statement on `sluice.job_types`. Must not: apply the limits (the worker
//! and sandbox do) or check that the component is valid Wasm.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::types::Backoff;
use crate::validate::{check_allow_list, check_grants, validate_job_type_name, validate_tenant_id};
use crate::{Store, StoreError, text, time_range};

/// What to register (upsert) for a job type. `None` limits mean "host default".
#[derive(Clone, Debug, PartialEq)]
pub struct JobTypeSpec {
    /// The tenant the type belongs to; jobs of the type are this tenant's.
    pub tenant: String,
    /// 1 to 128 characters.
    pub name: String,
    /// A component of the same tenant.
    pub component_id: i64,
    /// Attempts a job of this type gets unless it asks otherwise; at least 1.
    pub max_attempts: i32,
    /// Delay before the first retry, doubled per attempt (millisecond precision); `None`:
    /// the host default.
    pub backoff_base: Option<Duration>,
    /// Longest delay between retries; `None`: the host default.
    pub backoff_cap: Option<Duration>,
    /// Fraction in `0.0..=1.0`.
    pub backoff_jitter: Option<f64>,
    /// Wall-clock limit of one attempt (zero: none, fuel still bounds it); `None`: the host
    /// default.
    pub timeout: Option<Duration>,
    /// Fuel (Wasm CPU units) one attempt may burn; `None`: the host default.
    pub fuel: Option<u64>,
    /// Linear memory one attempt may grow to, in bytes; `None`: the host default.
    pub memory_bytes: Option<u64>,
    /// Largest output one attempt may return, in bytes; `None`: the host default.
    pub output_bytes: Option<u64>,
    /// Log bytes kept per attempt; `None`: the host default.
    pub log_bytes: Option<u64>,
    /// Outbound HTTP: what the type's attempts may call, and how much.
    pub http: HttpSpec,
    /// Names of the tenant's secrets the type's attempts may read (empty: none).
    pub secrets: Vec<String>,
    /// Durable (`docs/durable.md`): every host call's result is journaled and a retried
    /// attempt replays them instead of repeating them.
    pub durable: bool,
    /// The cap on one job's journal (`None`: the host default).
    pub journal_bytes: Option<u64>,
}

/// A job type's outbound HTTP grant as stored. The store keeps the entries as text; the
/// host parses and normalises them before (sluice_egress::AllowList) and again when it
/// builds an attempt's grant. `None` limits mean "host default".
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HttpSpec {
    /// `scheme://host[:port]` or `scheme://*.suffix[:port]`; empty: no outbound HTTP.
    pub allow: Vec<String>,
    /// Requests one attempt may start (0: none).
    pub max_requests: Option<u32>,
    /// Request body bytes per request.
    pub request_bytes: Option<u64>,
    /// Response body bytes per request.
    pub response_bytes: Option<u64>,
    /// Caps on each request's connect (TCP + TLS), first byte and between-bytes waits;
    /// every wait is still clamped to the guest's own timeout and the attempt's deadline.
    pub connect_timeout: Option<Duration>,
    /// Cap on the wait for a response head; `None`: the host default.
    pub first_byte_timeout: Option<Duration>,
    /// Cap on the wait between two chunks of a response body; `None`: the host default.
    pub between_bytes_timeout: Option<Duration>,
}

impl JobTypeSpec {
    /// A job type with 3 attempts and host defaults for everything else.
    pub fn new(tenant: impl Into<String>, name: impl Into<String>, component_id: i64) -> Self {
        JobTypeSpec {
            tenant: tenant.into(),
            name: name.into(),
            component_id,
            max_attempts: 3,
            backoff_base: None,
            backoff_cap: None,
            backoff_jitter: None,
            timeout: None,
            fuel: None,
            memory_bytes: None,
            output_bytes: None,
            log_bytes: None,
            http: HttpSpec::default(),
            secrets: Vec::new(),
            durable: false,
            journal_bytes: None,
        }
    }
}

/// A stored job type. Millisecond/byte columns as stored; `None` means host default.
#[derive(Clone, Debug, PartialEq, sqlx::FromRow)]
pub struct JobTypeRecord {
    /// The tenant the type belongs to (`sluice.job_types.tenant`).
    pub tenant: String,
    /// The type's name, unique within the tenant; jobs name it as their `job_type`.
    pub name: String,
    /// The component (of the same tenant, `sluice.components.id`) its attempts run.
    pub component_id: i64,
    /// Attempts a job of this type gets when its enqueue does not say; at least 1.
    pub max_attempts: i32,
    /// Delay before the first retry, in milliseconds; see [`JobTypeRecord::backoff`].
    pub backoff_base_ms: Option<i64>,
    /// Longest delay between retries, in milliseconds.
    pub backoff_cap_ms: Option<i64>,
    /// Fraction of the delay added or removed at random, `0.0..=1.0`.
    pub backoff_jitter: Option<f64>,
    /// Wall-clock limit of one attempt, in milliseconds (0: none); see
    /// [`JobTypeRecord::timeout`].
    pub timeout_ms: Option<i64>,
    /// Fuel (Wasm CPU units) one attempt may burn.
    pub fuel: Option<i64>,
    /// Linear memory one attempt may grow to, in bytes.
    pub memory_bytes: Option<i64>,
    /// Largest output one attempt may return, in bytes.
    pub output_bytes: Option<i64>,
    /// Log bytes kept per attempt.
    pub log_bytes: Option<i64>,
    /// Destinations granted for outbound HTTP (normalised entries; empty: none).
    pub http_allow: Vec<String>,
    /// Outbound requests one attempt may start (0: none).
    pub http_max_requests: Option<i32>,
    /// Request body bytes per outbound request.
    pub http_request_bytes: Option<i64>,
    /// Response body bytes per outbound request.
    pub http_response_bytes: Option<i64>,
    /// Cap on connecting (TCP and TLS) per request, in milliseconds.
    pub http_connect_timeout_ms: Option<i64>,
    /// Cap on the wait for a response head, in milliseconds.
    pub http_first_byte_timeout_ms: Option<i64>,
    /// Cap on the wait between two chunks of a response body, in milliseconds.
    pub http_between_bytes_timeout_ms: Option<i64>,
    /// Names of the tenant's secrets granted to the type (empty: none).
    pub secrets: Vec<String>,
    /// Durable: host calls journaled, retries replay them (`docs/durable.md`).
    pub durable: bool,
    /// The type's cap on one job's journal (`None`: the host default).
    pub journal_bytes: Option<i64>,
    /// When the type was first registered.
    pub created_at: DateTime<Utc>,
    /// When it was last upserted or pointed at another component.
    pub updated_at: DateTime<Utc>,
    /// Its flow controls (docs/flow-control.md), set apart by [`Store::set_flow`].
    #[sqlx(flatten)]
    pub flow: crate::FlowLimits,
}

impl JobTypeRecord {
    /// This type's retry backoff: its own settings where present, `default` elsewhere.
    pub fn backoff(&self, default: Backoff) -> Backoff {
        let ms = |v: Option<i64>| v.map(|ms| Duration::from_millis(ms.max(0) as u64));
        Backoff {
            base: ms(self.backoff_base_ms).unwrap_or(default.base),
            cap: ms(self.backoff_cap_ms).unwrap_or(default.cap),
            jitter: self.backoff_jitter.unwrap_or(default.jitter),
        }
    }

    /// The wall-clock timeout, if the type sets one; zero means the type asked for none
    /// (fuel still bounds the attempt).
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_ms
            .map(|ms| Duration::from_millis(ms.max(0) as u64))
    }
}

/// Upsert in one statement; no row (and nothing written) when the tenant or the
/// tenant's component does not exist.
const UPSERT_JOB_TYPE: &str = include_str!("../sql/job_types/upsert.sql");
const TENANT_EXISTS: &str = include_str!("../sql/tenants/exists.sql");
const GET_JOB_TYPE: &str = include_str!("../sql/job_types/get.sql");
const LIST_JOB_TYPES: &str = include_str!("../sql/job_types/list.sql");
/// Guarded on the type existing and the component being the tenant's.
const SET_COMPONENT: &str = include_str!("../sql/job_types/set_component.sql");

/// Refuses the names Sluice keeps for types it runs itself (`sluice.webhook`, ...).
fn check_not_reserved(name: &str) -> Result<(), StoreError> {
    if name.starts_with("sluice.") {
        return Err(StoreError::InvalidInput {
            field: "job_type",
            message: format!(
                "`{name}`: names starting with `sluice.` are reserved for Sluice's own job types"
            ),
        });
    }
    Ok(())
}

fn opt_ms(field: &'static str, d: Option<Duration>) -> Result<Option<i64>, StoreError> {
    d.map(|d| {
        i64::try_from(d.as_millis()).map_err(|_| StoreError::InvalidInput {
            field,
            message: format!("{d:?} is too long"),
        })
    })
    .transpose()
}

/// A timeout of at least 1 ms, in milliseconds.
fn positive_ms(field: &'static str, d: Option<Duration>) -> Result<Option<i64>, StoreError> {
    match opt_ms(field, d)? {
        Some(ms) if ms < 1 => Err(StoreError::InvalidInput {
            field,
            message: format!("{:?} is under 1 ms", d.unwrap_or_default()),
        }),
        ms => Ok(ms),
    }
}

fn opt_positive(field: &'static str, v: Option<u64>) -> Result<Option<i64>, StoreError> {
    v.map(|v| match i64::try_from(v) {
        Ok(v) if v > 0 => Ok(v),
        _ => Err(StoreError::InvalidInput {
            field,
            message: format!("{v} is out of range: use 1..=i64::MAX, or None for the host default"),
        }),
    })
    .transpose()
}

impl Store {
    /// Registers or replaces a job type (every field is overwritten).
    pub async fn set_job_type(&self, spec: &JobTypeSpec) -> Result<JobTypeRecord, StoreError> {
        validate_tenant_id(&spec.tenant)
            .map_err(|_| StoreError::UnknownTenant(spec.tenant.clone()))?;
        validate_job_type_name(&spec.name)?;
        check_not_reserved(&spec.name)?;
        if spec.max_attempts < 1 {
            return Err(StoreError::InvalidInput {
                field: "max_attempts",
                message: format!("must be at least 1, got {}", spec.max_attempts),
            });
        }
        if let Some(j) = spec.backoff_jitter
            && !(0.0..=1.0).contains(&j)
        {
            return Err(StoreError::InvalidInput {
                field: "backoff_jitter",
                message: format!("must be a fraction between 0 and 1, got {j}"),
            });
        }
        for (field, delay) in [
            ("backoff_base", spec.backoff_base),
            ("backoff_cap", spec.backoff_cap),
        ] {
            if let Some(d) = delay {
                time_range::check_delay(field, d)?;
            }
        }
        let timeout_ms = opt_ms("timeout", spec.timeout)?;
        if timeout_ms == Some(0) && spec.timeout.is_some_and(|t| !t.is_zero()) {
            return Err(StoreError::InvalidInput {
                field: "timeout",
                message: format!(
                    "{:?} is under 1 ms: use 0 for no wall-clock timeout, or at least 1 ms",
                    spec.timeout.unwrap_or_default()
                ),
            });
        }
        check_allow_list("allow_http", &spec.http.allow)?;
        check_grants("secrets", &spec.secrets)?;
        let max_requests = spec
            .http
            .max_requests
            .map(|n| {
                i32::try_from(n).map_err(|_| StoreError::InvalidInput {
                    field: "http_max_requests",
                    message: format!("{n} is out of range (at most {})", i32::MAX),
                })
            })
            .transpose()?;
        let row: Option<JobTypeRecord> = sqlx::query_as(UPSERT_JOB_TYPE)
            .bind(&spec.tenant)
            .bind(&spec.name)
            .bind(spec.component_id)
            .bind(spec.max_attempts)
            .bind(opt_ms("backoff_base", spec.backoff_base)?)
            .bind(opt_ms("backoff_cap", spec.backoff_cap)?)
            .bind(spec.backoff_jitter)
            .bind(timeout_ms)
            .bind(opt_positive("fuel", spec.fuel)?)
            .bind(opt_positive("memory_bytes", spec.memory_bytes)?)
            .bind(opt_positive("output_bytes", spec.output_bytes)?)
            .bind(opt_positive("log_bytes", spec.log_bytes)?)
            .bind(&spec.http.allow)
            .bind(max_requests)
            .bind(opt_positive("http_request_bytes", spec.http.request_bytes)?)
            .bind(opt_positive(
                "http_response_bytes",
                spec.http.response_bytes,
            )?)
            .bind(positive_ms(
                "http_connect_timeout",
                spec.http.connect_timeout,
            )?)
            .bind(positive_ms(
                "http_first_byte_timeout",
                spec.http.first_byte_timeout,
            )?)
            .bind(positive_ms(
                "http_between_bytes_timeout",
                spec.http.between_bytes_timeout,
            )?)
            .bind(&spec.secrets)
            .bind(spec.durable)
            .bind(opt_positive("journal_bytes", spec.journal_bytes)?)
            .fetch_optional(&self.pool)
            .await?;
        if let Some(row) = row {
            return Ok(row);
        }
        let tenant_exists: bool = sqlx::query_scalar(TENANT_EXISTS)
            .bind(&spec.tenant)
            .fetch_one(&self.pool)
            .await?;
        Err(if tenant_exists {
            StoreError::NotFound {
                entity: "component",
                id: format!("{} of tenant {}", spec.component_id, spec.tenant),
            }
        } else {
            StoreError::UnknownTenant(spec.tenant.clone())
        })
    }

    /// One job type.
    pub async fn get_job_type(
        &self,
        tenant: &str,
        name: &str,
    ) -> Result<Option<JobTypeRecord>, StoreError> {
        if !text::findable(tenant) || !text::findable(name) {
            return Ok(None);
        }
        Ok(sqlx::query_as(GET_JOB_TYPE)
            .bind(tenant)
            .bind(name)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Job types of one tenant (or of all), by tenant and name.
    pub async fn list_job_types(
        &self,
        tenant: Option<&str>,
    ) -> Result<Vec<JobTypeRecord>, StoreError> {
        if !tenant.is_none_or(text::findable) {
            return Ok(Vec::new());
        }
        Ok(sqlx::query_as(LIST_JOB_TYPES)
            .bind(tenant)
            .fetch_all(&self.pool)
            .await?)
    }

    /// Points the registered type `job_type` at `component_id`, another component
    /// (version) of the same tenant, keeping every other setting: the dashboard's
    /// rollback. One guarded UPDATE. An unknown type is `UnknownJobType`; a component of
    /// another tenant or of none is `NotFound` naming it. Job types keep no contract of
    /// their own (the component's is checked at upload and routed by the claim), so any
    /// stored component of the tenant is accepted, as [`Store::set_job_type`] does.
    pub async fn set_job_type_component(
        &self,
        tenant: &str,
        job_type: &str,
        component_id: i64,
    ) -> Result<JobTypeRecord, StoreError> {
        let unknown_type = || StoreError::UnknownJobType {
            tenant: tenant.to_owned(),
            job_type: job_type.to_owned(),
        };
        if !text::findable(tenant) || !text::findable(job_type) {
            return Err(unknown_type());
        }
        let row: Option<JobTypeRecord> = sqlx::query_as(SET_COMPONENT)
            .bind(tenant)
            .bind(job_type)
            .bind(component_id)
            .fetch_optional(&self.pool)
            .await?;
        if let Some(row) = row {
            return Ok(row);
        }
        if self.get_job_type(tenant, job_type).await?.is_none() {
            return Err(unknown_type());
        }
        Err(StoreError::NotFound {
            entity: "component",
            id: format!("{component_id} of tenant {tenant}"),
        })
    }
}
