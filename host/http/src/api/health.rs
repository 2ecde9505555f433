//! `GET /healthz`: the process is up and the database answers. No authentication, so a
//! load balancer can call it; it reveals nothing but "ok" or "unavailable".

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use super::error::{ApiError, ErrorBody};
use super::state::AppState;

#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Health {
    /// Always `ok` in a 200.
    #[schema(pattern = "^ok$")]
    pub status: String,
}

/// Liveness and database check.
#[utoipa::path(
    get, path = "/healthz", tag = "meta",
    responses(
        (status = 200, body = Health),
        (status = 503, description = "The database does not answer", body = ErrorBody),
    )
)]
pub async fn healthz(State(state): State<AppState>) -> Result<Json<Health>, ApiError> {
    match state.store().ping().await {
        Ok(()) => Ok(Json(Health {
            status: "ok".into(),
        })),
        Err(error) => {
            tracing::warn!(%error, "health check: the database does not answer");
            Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "the database does not answer",
            ))
        }
    }
}
