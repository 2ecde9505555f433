//! Job endpoints: enqueue (one or a batch), read (a job, its attempts), list, cancel, signal,
//! retry. Each handler
//! checks the caller's rate where it enqueues, calls one or two store methods scoped by
//! `caller.tenant`, and shapes the answer. Another tenant's job is a 404 like a missing
//! one, because the store's lookup is scoped by tenant.
//!
//! Must not: decide duplicates (the store's unique index does) or touch SQL.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use sluice_store::{JobFilter, JobState};

use super::auth::Caller;
use super::error::{ApiError, ApiJson, ApiPath, ApiQuery, ErrorBody};
use super::job_views::{BatchRequest, EnqueueRequest, GetJobParams, ListParams};
use super::state::AppState;
use super::trace_context::{IncomingTrace, TraceHeaderParams};
use super::validate;
use crate::app_state::wait_slots::MAX_WAITS_PER_TENANT;
use serde::Deserialize;
use sluice_wire::{
    AttemptView, BatchItem, BatchResponse, JobListItem, JobPage, JobView, SignalSent, schemas,
};
use utoipa::ToSchema;

/// Most jobs one `POST /v1/jobs:batch` may carry.
pub const MAX_BATCH: usize = 1000;

async fn load(state: &AppState, caller: &Caller, id: i64) -> Result<JobView, ApiError> {
    state
        .store()
        .get(Some(&caller.tenant), id)
        .await?
        .map(JobView::from)
        .ok_or_else(|| ApiError::not_found(format!("job {id} not found")))
}

/// Enqueue a job.
#[utoipa::path(
    post, path = "/v1/jobs", tag = "jobs",
    params(TraceHeaderParams),
    request_body = EnqueueRequest,
    responses(
        (status = 201, description = "Created", body = JobView),
        (status = 200, description = "Duplicate idempotency key: the existing job", body = JobView),
        (status = 400, description = "Malformed JSON or field (the message names it)", body = ErrorBody),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
        (status = 404, description = "Unknown job type", body = ErrorBody),
        (status = 413, description = "Payload over the tenant's limit", body = ErrorBody),
        (status = 429, description = "Over the tenant's enqueue rate (see Retry-After)", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn enqueue(
    State(state): State<AppState>,
    caller: Caller,
    incoming: IncomingTrace,
    ApiJson(request): ApiJson<EnqueueRequest>,
) -> Result<(StatusCode, Json<JobView>), ApiError> {
    let mut job = request.into_new_job(&caller.tenant, "")?;
    caller.take_enqueue_tokens(&state, 1)?;
    let trace = incoming.enqueue(&state.config().tracer, "/v1/jobs", || {
        format!("enqueue {}", job.job_type)
    });
    job.trace = trace.stored.clone();
    let enqueued = match state.store().enqueue(&job).await {
        Ok(enqueued) => {
            trace.end(&caller.tenant, Ok(&[enqueued.id]));
            enqueued
        }
        Err(error) => {
            let error = ApiError::from(error);
            trace.end(&caller.tenant, Err(error.status.as_u16()));
            return Err(error);
        }
    };
    if enqueued.created {
        state.metrics().job_enqueued(&caller.tenant, &job.job_type);
    }
    let view = load(&state, &caller, enqueued.id).await?;
    let status = if enqueued.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(view)))
}

/// Enqueue many jobs in one call: all of them or none.
#[utoipa::path(
    post, path = "/v1/jobs:batch", tag = "jobs",
    params(TraceHeaderParams),
    request_body = BatchRequest,
    responses(
        (status = 200, description = "Every job enqueued (or found by its idempotency key), in request order", body = BatchResponse),
        (status = 400, description = "Malformed JSON or field (the message names it, e.g. jobs[3].priority)", body = ErrorBody),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
        (status = 404, description = "Unknown job type", body = ErrorBody),
        (status = 413, description = "A payload over the tenant's limit", body = ErrorBody),
        (status = 429, description = "Over the tenant's enqueue rate (see Retry-After)", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn enqueue_batch(
    State(state): State<AppState>,
    caller: Caller,
    incoming: IncomingTrace,
    ApiJson(request): ApiJson<BatchRequest>,
) -> Result<Json<BatchResponse>, ApiError> {
    if request.jobs.is_empty() || request.jobs.len() > MAX_BATCH {
        return Err(ApiError::bad_request(format!(
            "invalid jobs: send 1 to {MAX_BATCH} jobs per batch, got {}",
            request.jobs.len()
        )));
    }
    let jobs = request
        .jobs
        .into_iter()
        .enumerate()
        .map(|(i, job)| job.into_new_job(&caller.tenant, &format!("jobs[{i}].")))
        .collect::<Result<Vec<_>, _>>()?;
    caller.take_enqueue_tokens(&state, jobs.len())?;
    let trace = incoming.enqueue(&state.config().tracer, "/v1/jobs:batch", || {
        "enqueue batch".to_owned()
    });
    let jobs: Vec<_> = jobs
        .into_iter()
        .map(|mut job| {
            job.trace = trace.stored.clone();
            job
        })
        .collect();
    let results = match state.store().enqueue_many(&jobs).await {
        Ok(results) => {
            let ids: Vec<i64> = results.iter().map(|r| r.id).collect();
            trace.end(&caller.tenant, Ok(&ids));
            results
        }
        Err(error) => {
            let error = ApiError::from(error);
            trace.end(&caller.tenant, Err(error.status.as_u16()));
            return Err(error);
        }
    };
    for (job, result) in jobs.iter().zip(&results) {
        if result.created {
            state.metrics().job_enqueued(&caller.tenant, &job.job_type);
        }
    }
    Ok(Json(BatchResponse {
        jobs: results.into_iter().map(BatchItem::from).collect(),
    }))
}

/// One job with its payload and output; with `wait`, once it is finished.
#[utoipa::path(
    get, path = "/v1/jobs/{id}", tag = "jobs",
    params(("id" = i64, Path, description = "Job id"), GetJobParams),
    responses(
        (status = 200, description = "The job (with `wait`: finished, or as it is when the wait ends)", body = JobView),
        (status = 400, description = "A malformed or too long `wait`", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, description = "No such job for this tenant", body = ErrorBody),
        (status = 429, description = "The tenant has too many waits open (see Retry-After)", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn get_job(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<i64>,
    ApiQuery(params): ApiQuery<GetJobParams>,
) -> Result<Json<JobView>, ApiError> {
    let wait = params.wait_for()?.min(state.config().max_job_wait);
    if wait.is_zero() {
        return Ok(Json(load(&state, &caller, id).await?));
    }
    let _slot = state.wait_slots().take(&caller.tenant).ok_or_else(|| {
        ApiError::rate_limited(
            format!(
                "too many waits: tenant {:?} has {MAX_WAITS_PER_TENANT} requests waiting \
                 for jobs; wait for fewer at once",
                caller.tenant
            ),
            1,
        )
    })?;
    state
        .finish_waits()
        .wait(Some(&caller.tenant), id, wait)
        .await?
        .map(|job| Json(JobView::from(job)))
        .ok_or_else(|| ApiError::not_found(format!("job {id} not found")))
}

/// Every attempt of one job, oldest first: worker, start, end, outcome, error, fuel.
#[utoipa::path(
    get, path = "/v1/jobs/{id}/attempts", tag = "jobs",
    params(("id" = i64, Path, description = "Job id")),
    responses(
        (status = 200, description = "Its attempts, oldest first (the JSON of `sluice jobs attempts ID --json`)", body = Vec<AttemptView>),
        (status = 401, body = ErrorBody),
        (status = 404, description = "No such job for this tenant", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn list_attempts(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<Vec<AttemptView>>, ApiError> {
    let store = state.store();
    let attempts = store.attempts(Some(&caller.tenant), id).await?;
    if attempts.is_empty() && store.get(Some(&caller.tenant), id).await?.is_none() {
        return Err(ApiError::not_found(format!("job {id} not found")));
    }
    Ok(Json(attempts.into_iter().map(AttemptView::from).collect()))
}

/// Jobs of the tenant, newest first, one page at a time (keyset cursor).
#[utoipa::path(
    get, path = "/v1/jobs", tag = "jobs",
    params(ListParams),
    responses(
        (status = 200, body = JobPage),
        (status = 400, description = "Unknown state, bad cursor or limit", body = ErrorBody),
        (status = 401, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn list_jobs(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(params): ApiQuery<ListParams>,
) -> Result<Json<JobPage>, ApiError> {
    validate::text_opt("type", params.job_type.as_deref())?;
    let job_state = params
        .state
        .as_deref()
        .map(str::parse::<JobState>)
        .transpose()
        .map_err(|e| ApiError::bad_request(format!("invalid state: {e}")))?;
    let after = params
        .cursor
        .as_deref()
        .map(|c| {
            c.parse::<i64>().map_err(|_| {
                ApiError::bad_request(format!(
                    "invalid cursor: {c:?} is not a cursor; pass next_cursor from the previous page"
                ))
            })
        })
        .transpose()?;
    let limit = params.limit.unwrap_or(100);
    let jobs = state
        .store()
        .list(&JobFilter {
            tenant: Some(caller.tenant.clone()),
            state: job_state,
            job_type: params.job_type,
            parent: params.parent,
            after,
            limit,
        })
        .await?;
    let next_cursor = (jobs.len() == limit as usize)
        .then(|| jobs.last().map(|j| j.id.to_string()))
        .flatten();
    Ok(Json(JobPage {
        jobs: jobs.into_iter().map(JobListItem::from).collect(),
        next_cursor,
    }))
}

/// Cancel a pending job, or ask a running one to stop.
#[utoipa::path(
    post, path = "/v1/jobs/{id}/cancel", tag = "jobs",
    params(("id" = i64, Path, description = "Job id")),
    responses(
        (status = 200, description = "Cancelled, or (running) cancel requested", body = JobView),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "The job is already finished", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn cancel_job(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<JobView>, ApiError> {
    state.store().cancel(Some(&caller.tenant), id).await?;
    Ok(Json(load(&state, &caller, id).await?))
}

/// Run a dead or cancelled job again, with fresh attempts.
#[utoipa::path(
    post, path = "/v1/jobs/{id}/retry", tag = "jobs",
    params(("id" = i64, Path, description = "Job id")),
    responses(
        (status = 200, description = "Back to pending", body = JobView),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "The job is not dead or cancelled", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn retry_job(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<JobView>, ApiError> {
    state.store().retry(Some(&caller.tenant), id).await?;
    Ok(Json(load(&state, &caller, id).await?))
}

/// A signal's payload.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SignalRequest {
    /// JSON the job's `await-signal` returns (absent or null: it returns `null`).
    #[schema(schema_with = schemas::any_json)]
    pub payload: Option<serde_json::Value>,
}

/// Send a signal to a job: a durable job awaiting this name wakes now; otherwise the
/// signal is kept until the job awaits it (docs/durable.md).
#[utoipa::path(
    post, path = "/v1/jobs/{id}/signals/{name}", tag = "jobs",
    params(
        ("id" = i64, Path, description = "Job id"),
        ("name" = String, Path, description = "The signal's name, 1 to 128 characters", min_length = 1, max_length = 128),
    ),
    request_body = SignalRequest,
    responses(
        (status = 200, description = "Sent (and whether it woke the job)", body = SignalSent),
        (status = 400, description = "A malformed name or payload (named)", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "The job is already finished", body = ErrorBody),
        (status = 413, description = "The payload is over the tenant's payload limit", body = ErrorBody),
        (status = 429, description = "Over the tenant's enqueue rate", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn send_signal(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((id, name)): ApiPath<(i64, String)>,
    ApiJson(request): ApiJson<SignalRequest>,
) -> Result<Json<SignalSent>, ApiError> {
    caller.take_enqueue_tokens(&state, 1)?;
    let payload = request.payload.filter(|p| !p.is_null());
    let woke = state
        .store()
        .send_signal(Some(&caller.tenant), id, &name, payload.as_ref())
        .await?;
    Ok(Json(SignalSent {
        job_id: id,
        name,
        woke,
    }))
}
