//! `GET /v1/jobs/{id}/attempts/{n}/logs`: what one attempt of a job logged, for the job's
//! tenant. Another tenant's job is a 404 like a missing one (the store's reads are
//! scoped by `caller.tenant`); an attempt that ran but logged nothing answers 200 with
//! an empty `log`.
//!
//! Must not: touch SQL, or show a log without the tenant scope.

use axum::Json;
use axum::extract::State;
use chrono::{DateTime, Utc};
use serde::Serialize;
use sluice_store::AttemptLogRecord;
use utoipa::ToSchema;

use super::auth::Caller;
use super::error::{ApiError, ApiPath, ErrorBody};
use super::schemas;
use super::state::AppState;

/// The log of one attempt: host `log` lines (`[INFO] message`), then the guest's stdout
/// and stderr (`[stdout] text`), as captured and masked by the sandbox, cut at the
/// attempt's log cap.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AttemptLogView {
    #[schema(minimum = 1)]
    pub job_id: i64,
    /// The attempt number (it starts again at 1 after `POST /v1/jobs/{id}/retry`; the
    /// newest run of that number is shown).
    #[schema(minimum = 1)]
    pub attempt: i32,
    pub started_at: DateTime<Utc>,
    #[schema(required = true)]
    pub finished_at: Option<DateTime<Utc>>,
    /// How the attempt ended; null while it runs.
    #[schema(schema_with = schemas::attempt_outcome, required = true)]
    pub outcome: Option<String>,
    /// The kept log text (invalid UTF-8 replaced); empty when the attempt logged nothing.
    pub log: String,
    /// Bytes dropped at the cap after `log` (shown as `… 12,345 bytes dropped`).
    #[schema(minimum = 0)]
    pub dropped_bytes: i64,
    /// True when bytes were dropped.
    pub truncated: bool,
}

impl AttemptLogView {
    fn new(job_id: i64, record: AttemptLogRecord) -> Self {
        AttemptLogView {
            job_id,
            attempt: record.attempt,
            started_at: record.started_at,
            finished_at: record.finished_at,
            outcome: record.outcome.map(|o| o.as_str().to_owned()),
            log: String::from_utf8_lossy(record.log.as_deref().unwrap_or_default()).into_owned(),
            dropped_bytes: record.dropped_bytes,
            truncated: record.dropped_bytes > 0,
        }
    }
}

/// What one attempt of a job logged.
#[utoipa::path(
    get, path = "/v1/jobs/{id}/attempts/{n}/logs", tag = "jobs",
    params(
        ("id" = i64, Path, description = "Job id"),
        ("n" = i32, Path, description = "Attempt number, from 1"),
    ),
    responses(
        (status = 200, body = AttemptLogView),
        (status = 400, description = "An id or attempt number that is not an integer", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, description = "No such job for this tenant, or no such attempt", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn get_attempt_log(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((id, n)): ApiPath<(i64, i32)>,
) -> Result<Json<AttemptLogView>, ApiError> {
    let store = state.store();
    let mut attempts = store
        .attempt_logs(Some(&caller.tenant), id, Some(n))
        .await?;
    match attempts.pop() {
        Some(newest) => Ok(Json(AttemptLogView::new(id, newest))),
        None if store.get(Some(&caller.tenant), id).await?.is_some() => {
            Err(ApiError::not_found(format!("job {id} has no attempt {n}")))
        }
        None => Err(ApiError::not_found(format!("job {id} not found"))),
    }
}
