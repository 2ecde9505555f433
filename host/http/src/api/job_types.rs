//! Job type endpoints: register (upsert) a type pointing at one of the tenant's
//! components, refused above the tenant's fuel / memory / timeout caps; list types; show
//! one.
//!
//! Must not: look up a component outside the caller's tenant (another tenant's component
//! is a 404 like a missing one).

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use sluice_store::{HttpSpec, JobTypeSpec};
use utoipa::ToSchema;

use super::auth::Caller;
use super::error::{ApiError, ApiJson, ApiPath, ErrorBody};
use super::state::AppState;
use super::validate;
use sluice_shared::grants::SetTypeError;
use sluice_wire::JobTypeView;

/// What a job type runs, and with which limits (unset: the host default, capped by the
/// tenant's caps).
/// Limits above the tenant's caps are refused with a 400 naming them.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JobTypeRequest {
    /// `NAME` (latest version) or `NAME@VERSION` of one of the tenant's components.
    pub component: String,
    /// Attempts a job gets unless it asks otherwise (default 3).
    #[serde(default, deserialize_with = "super::whole::option")]
    #[schema(minimum = 1)]
    pub max_attempts: Option<i32>,
    /// Wall-clock limit of one attempt.
    #[serde(default, deserialize_with = "super::whole::option")]
    #[schema(minimum = 1, maximum = 9223372036854775807_i64)]
    pub timeout_ms: Option<u64>,
    #[serde(default, deserialize_with = "super::whole::option")]
    #[schema(minimum = 1, maximum = 9223372036854775807_i64)]
    pub fuel: Option<u64>,
    #[serde(default, deserialize_with = "super::whole::option")]
    #[schema(minimum = 1, maximum = 9223372036854775807_i64)]
    pub memory_bytes: Option<u64>,
    #[serde(default, deserialize_with = "super::whole::option")]
    #[schema(minimum = 1, maximum = 9223372036854775807_i64)]
    pub output_bytes: Option<u64>,
    #[serde(default, deserialize_with = "super::whole::option")]
    #[schema(minimum = 1, maximum = 9223372036854775807_i64)]
    pub log_bytes: Option<u64>,
    /// Retry delay before the second attempt, at most 100 years (3155760000000 ms).
    #[serde(default, deserialize_with = "super::whole::option")]
    #[schema(minimum = 0)]
    pub backoff_base_ms: Option<u64>,
    /// Longest retry delay, at most 100 years (3155760000000 ms).
    #[serde(default, deserialize_with = "super::whole::option")]
    #[schema(minimum = 0)]
    pub backoff_cap_ms: Option<u64>,
    /// Fraction 0..=1 of random spread on retry delays.
    #[schema(minimum = 0, maximum = 1)]
    pub backoff_jitter: Option<f64>,
    /// Destinations attempts may call over HTTP: `scheme://host[:port]` or
    /// `scheme://*.suffix[:port]` (no port: the scheme's default only). Absent or empty:
    /// no outbound HTTP. Each must be inside the tenant's egress bound, if it has one.
    #[schema(max_items = 64, value_type = Option<Vec<String>>)]
    pub allow_http: Option<Vec<String>>,
    /// Outbound requests one attempt may start (default 20).
    #[serde(default, deserialize_with = "super::whole::option")]
    #[schema(minimum = 0, maximum = 2147483647)]
    pub http_max_requests: Option<u32>,
    /// Largest request body of one outbound request (default 10 MiB).
    #[serde(default, deserialize_with = "super::whole::option")]
    #[schema(minimum = 1, maximum = 9223372036854775807_i64)]
    pub http_max_request_bytes: Option<u64>,
    /// Largest response body of one outbound request (default 10 MiB).
    #[serde(default, deserialize_with = "super::whole::option")]
    #[schema(minimum = 1, maximum = 9223372036854775807_i64)]
    pub http_max_response_bytes: Option<u64>,
    /// Longest wait to connect (TCP + TLS) per outbound request (default 10 s).
    #[serde(default, deserialize_with = "super::whole::option")]
    #[schema(minimum = 1, maximum = 9223372036854775807_i64)]
    pub http_connect_timeout_ms: Option<u64>,
    /// Longest wait for a response head per outbound request (default 30 s).
    #[serde(default, deserialize_with = "super::whole::option")]
    #[schema(minimum = 1, maximum = 9223372036854775807_i64)]
    pub http_first_byte_timeout_ms: Option<u64>,
    /// Longest wait between two pieces of a response body (default 30 s).
    #[serde(default, deserialize_with = "super::whole::option")]
    #[schema(minimum = 1, maximum = 9223372036854775807_i64)]
    pub http_between_bytes_timeout_ms: Option<u64>,
    /// Names of the tenant's secrets attempts may read (`[A-Za-z_][A-Za-z0-9_]*`, set or
    /// not yet). Absent or empty: none.
    #[schema(max_items = 64, value_type = Option<Vec<String>>)]
    pub secrets: Option<Vec<String>>,
    /// Durable: every host call's result is journaled and a retried attempt replays them
    /// instead of repeating them (docs/durable.md). Absent: false.
    pub durable: Option<bool>,
    /// The cap on one job's journal (default 16 MiB); past it the attempt ends `fatal`.
    #[serde(default, deserialize_with = "super::whole::option")]
    #[schema(minimum = 1, maximum = 9223372036854775807_i64)]
    pub journal_bytes: Option<u64>,
}

/// Register or replace a job type.
#[utoipa::path(
    put, path = "/v1/job-types/{type}", tag = "job-types",
    params(("type" = String, Path, description = "Job type name, 1 to 128 characters", min_length = 1, max_length = 128)),
    request_body = JobTypeRequest,
    responses(
        (status = 200, body = JobTypeView),
        (status = 400, description = "A malformed field, or a limit above the tenant's cap (named)", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, description = "No such component for this tenant", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn put_job_type(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
    ApiJson(request): ApiJson<JobTypeRequest>,
) -> Result<Json<JobTypeView>, ApiError> {
    validate::text("type", &name)?;
    let networks = &state.sandbox().config().egress.networks;
    let allow = request.allow_http.unwrap_or_default();
    if allow.len() > sluice_store::MAX_ALLOW_ENTRIES {
        return Err(ApiError::bad_request(format!(
            "allow_http: {} entries, more than the {} a job type may have",
            allow.len(),
            sluice_store::MAX_ALLOW_ENTRIES
        )));
    }
    for (i, entry) in allow.iter().enumerate() {
        validate::text(&format!("allow_http[{i}]"), entry)?;
    }
    let secrets = request.secrets.unwrap_or_default();
    if secrets.len() > sluice_store::MAX_SECRET_GRANTS {
        return Err(ApiError::bad_request(format!(
            "secrets: {} names, more than the {} a job type may be granted",
            secrets.len(),
            sluice_store::MAX_SECRET_GRANTS
        )));
    }
    let (component, version) = match request.component.split_once('@') {
        Some((name, version)) => (name, Some(version)),
        None => (request.component.as_str(), None),
    };
    let component = state
        .store()
        .find_component(&caller.tenant, component, version)
        .await?
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "component {:?} not found; upload it with PUT /v1/components/{{name}}",
                request.component
            ))
        })?;
    let spec = JobTypeSpec {
        max_attempts: request.max_attempts.unwrap_or(3),
        backoff_base: request.backoff_base_ms.map(Duration::from_millis),
        backoff_cap: request.backoff_cap_ms.map(Duration::from_millis),
        backoff_jitter: request.backoff_jitter,
        timeout: request.timeout_ms.map(Duration::from_millis),
        fuel: request.fuel,
        memory_bytes: request.memory_bytes,
        output_bytes: request.output_bytes,
        log_bytes: request.log_bytes,
        http: HttpSpec {
            allow,
            max_requests: request.http_max_requests,
            request_bytes: request.http_max_request_bytes,
            response_bytes: request.http_max_response_bytes,
            connect_timeout: request.http_connect_timeout_ms.map(Duration::from_millis),
            first_byte_timeout: request
                .http_first_byte_timeout_ms
                .map(Duration::from_millis),
            between_bytes_timeout: request
                .http_between_bytes_timeout_ms
                .map(Duration::from_millis),
        },
        secrets,
        durable: request.durable.unwrap_or(false),
        journal_bytes: request.journal_bytes,
        ..JobTypeSpec::new(caller.tenant.clone(), name, component.id)
    };
    let record = sluice_shared::grants::set_job_type(state.store(), spec, "allow_http", networks)
        .await
        .map_err(|e| match e {
            SetTypeError::AllowList(e) => ApiError::bad_request(e.to_string()),
            SetTypeError::Store(e) => e.into(),
        })?;
    Ok(Json(record.into()))
}

/// The tenant's job types.
#[utoipa::path(
    get, path = "/v1/job-types", tag = "job-types",
    responses((status = 200, body = Vec<JobTypeView>), (status = 401, body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn list_job_types(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Vec<JobTypeView>>, ApiError> {
    let types = state.store().list_job_types(Some(&caller.tenant)).await?;
    Ok(Json(types.into_iter().map(Into::into).collect()))
}

/// One job type of the tenant.
#[utoipa::path(
    get, path = "/v1/job-types/{type}", tag = "job-types",
    params(("type" = String, Path, description = "Job type name")),
    responses(
        (status = 200, description = "The job type (the JSON of `sluice types show TYPE --json`)", body = JobTypeView),
        (status = 401, body = ErrorBody),
        (status = 404, description = "No such job type for this tenant", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn get_job_type(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<JobTypeView>, ApiError> {
    state
        .store()
        .get_job_type(&caller.tenant, &name)
        .await?
        .map(|t| Json(t.into()))
        .ok_or_else(|| ApiError::not_found(format!("job type {name:?} not found")))
}
