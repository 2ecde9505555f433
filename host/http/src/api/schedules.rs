//! `/v1/schedules`: cron schedules of the caller's tenant, the HTTP face of
//! `sluice schedules` (docs/schedules.md). Validation of the cron expression and the time
//! zone is the store's; this module parses the request fields the store cannot see.
//!
//! Must not: fire schedules (the scheduler in every worker does) or touch another
//! tenant's (every store call is scoped to the caller's tenant).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use sluice_store::{CatchUp, NewSchedule};
use utoipa::ToSchema;

use super::auth::Caller;
use super::error::{ApiError, ApiJson, ApiPath, ErrorBody};
use super::job_views::parse_priority;
use super::state::AppState;
use super::validate;
use sluice_shared::units::parse_duration;
use sluice_wire::{ScheduleView, schemas};

/// A schedule to create.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleRequest {
    /// Unique per tenant (a taken name is a 409).
    #[schema(min_length = 1, max_length = 128)]
    pub name: String,
    /// 5 fields (`*/5 * * * *`), or 6 with seconds first, each `*`, `*/step` or a list of
    /// numbers, or a nickname (`@daily`); a day list naming the 29th to 31st goes with
    /// every month. The server also reads ranges and names (`MON-FRI`); an expression
    /// that is not cron or never matches is a 400 naming it.
    #[schema(examples("*/5 * * * *"))]
    pub cron: String,
    /// IANA time zone (default `UTC`); an unknown zone is a 400.
    #[schema(examples("Europe/Paris"))]
    pub tz: Option<String>,
    /// The job type every slot enqueues.
    #[serde(rename = "type")]
    #[schema(min_length = 1, max_length = 128)]
    pub job_type: String,
    /// Any JSON value (default, and null: `{}`).
    #[schema(schema_with = schemas::any_json)]
    pub payload: Option<serde_json::Value>,
    #[schema(schema_with = schemas::priority_request)]
    pub priority: Option<serde_json::Value>,
    /// Attempts of each job (default: the job type's).
    #[serde(default, deserialize_with = "super::whole::option")]
    #[schema(minimum = 1)]
    pub max_attempts: Option<i32>,
    /// Each job runs at its slot plus up to this much, at most a week: one term (`30s`,
    /// `5m`, `2h`, `7d`; a bare number is seconds).
    #[schema(examples("30s"))]
    pub jitter: Option<String>,
    #[schema(schema_with = schemas::catch_up_request)]
    pub catch_up: Option<String>,
    /// With `all`: how many missed slots run at most, 1 to 100000 (default 10).
    #[serde(default, deserialize_with = "super::whole::option")]
    #[schema(minimum = 1, maximum = 100000)]
    pub max_catch_up: Option<u32>,
}

impl ScheduleRequest {
    fn into_new(self, tenant: &str) -> Result<NewSchedule, ApiError> {
        validate::text("name", &self.name)?;
        validate::text("cron", &self.cron)?;
        validate::text_opt("tz", self.tz.as_deref())?;
        validate::text("type", &self.job_type)?;
        let mut spec = NewSchedule::new(tenant, self.name, self.cron, self.job_type);
        if let Some(tz) = self.tz {
            spec.tz = tz;
        }
        if let Some(payload) = self.payload {
            spec.payload = payload.to_string().into_bytes();
        }
        spec.priority = parse_priority(self.priority.as_ref(), "priority")?;
        spec.max_attempts = self.max_attempts;
        if let Some(jitter) = self.jitter {
            spec.jitter = parse_duration(&jitter)
                .map_err(|e| ApiError::bad_request(format!("invalid jitter: {e}")))?;
        }
        if let Some(policy) = self.catch_up {
            spec.catch_up = policy
                .parse::<CatchUp>()
                .map_err(|e| ApiError::bad_request(format!("invalid catch_up: {e}")))?;
        }
        if let Some(n) = self.max_catch_up {
            spec.max_catch_up = n;
        }
        Ok(spec)
    }
}

fn missing(name: &str) -> ApiError {
    ApiError::not_found(format!("schedule {name:?} not found"))
}

/// Create a schedule; a bad cron expression or time zone is a 400 naming it.
#[utoipa::path(
    post, path = "/v1/schedules", tag = "schedules",
    request_body = ScheduleRequest,
    responses(
        (status = 201, description = "The stored schedule, with its next slot", body = ScheduleView),
        (status = 400, description = "Malformed field, cron expression or time zone (named)", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, description = "Unknown job type", body = ErrorBody),
        (status = 409, description = "The tenant already has a schedule of this name", body = ErrorBody),
        (status = 413, description = "Payload over the tenant's limit", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn create_schedule(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(request): ApiJson<ScheduleRequest>,
) -> Result<(StatusCode, Json<ScheduleView>), ApiError> {
    let spec = request.into_new(&caller.tenant)?;
    let record = state.store().create_schedule(&spec).await?;
    Ok((StatusCode::CREATED, Json(record.into())))
}

/// The tenant's schedules, with their counters (fired, skipped slots).
#[utoipa::path(
    get, path = "/v1/schedules", tag = "schedules",
    responses((status = 200, description = "Every schedule of the tenant, by name", body = Vec<ScheduleView>), (status = 401, body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn list_schedules(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Vec<ScheduleView>>, ApiError> {
    let schedules = state.store().list_schedules(Some(&caller.tenant)).await?;
    Ok(Json(schedules.into_iter().map(Into::into).collect()))
}

/// One schedule.
#[utoipa::path(
    get, path = "/v1/schedules/{name}", tag = "schedules",
    params(("name" = String, Path, description = "Schedule name")),
    responses((status = 200, description = "The schedule", body = ScheduleView), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn get_schedule(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<ScheduleView>, ApiError> {
    state
        .store()
        .get_schedule(&caller.tenant, &name)
        .await?
        .map(|s| Json(s.into()))
        .ok_or_else(|| missing(&name))
}

/// Stop firing (slots that pass while paused are not counted as missed).
#[utoipa::path(
    post, path = "/v1/schedules/{name}/pause", tag = "schedules",
    params(("name" = String, Path, description = "Schedule name")),
    responses((status = 200, description = "The paused schedule", body = ScheduleView), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn pause_schedule(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<ScheduleView>, ApiError> {
    let paused = state.store().pause_schedule(&caller.tenant, &name).await?;
    Ok(Json(paused.into()))
}

/// Fire again, from the next slot after now.
#[utoipa::path(
    post, path = "/v1/schedules/{name}/resume", tag = "schedules",
    params(("name" = String, Path, description = "Schedule name")),
    responses((status = 200, description = "The resumed schedule", body = ScheduleView), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn resume_schedule(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<ScheduleView>, ApiError> {
    let resumed = state.store().resume_schedule(&caller.tenant, &name).await?;
    Ok(Json(resumed.into()))
}

/// Delete a schedule (jobs it already enqueued stay).
#[utoipa::path(
    delete, path = "/v1/schedules/{name}", tag = "schedules",
    params(("name" = String, Path, description = "Schedule name")),
    responses((status = 204, description = "Deleted"), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn delete_schedule(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    state.store().delete_schedule(&caller.tenant, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}
