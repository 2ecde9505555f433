//! The one error shape of the HTTP API, `{"error": {"code": "...", "message": "..."}}`,
//! and the extractors that turn axum's own rejections (bad JSON, bad query, bad path,
//! unknown route, wrong method) into it.
//!
//! Owns: the mapping of [`StoreError`] to statuses and codes. Must not: put internal
//! details (SQL, driver messages, backtraces) in a response; those are logged here, where
//! the error is handled, and the client gets a generic message.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sluice_store::StoreError;
use utoipa::ToSchema;

/// The body of every error response.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// Every `code` an error answer carries, the document's enum of
/// [`ErrorDetail::code`]: typed clients generated from it know them all (and must keep
/// an unknown one, should a later server add it).
pub const ERROR_CODES: [&str; 18] = [
    "invalid_request",
    "invalid_component",
    "unauthorized",
    "forbidden",
    "read_only_token",
    "not_found",
    "job_type_not_found",
    "route_not_found",
    "method_not_allowed",
    "conflict",
    "payload_too_large",
    "request_timeout",
    "unsupported_media_type",
    "rate_limited",
    "contended",
    "unavailable",
    "secrets_key_missing",
    "internal",
];

fn error_code_schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    ObjectBuilder::new()
        .schema_type(SchemaType::Type(Type::String))
        .enum_values(Some(ERROR_CODES))
        .description(Some("What went wrong, for programs (stable)."))
        .into()
}

/// What went wrong: a stable machine-readable `code` and a message for people.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorDetail {
    #[schema(schema_with = error_code_schema)]
    pub code: String,
    pub message: String,
}

/// An error response. Build with the constructors; `IntoResponse` renders the shape.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// Seconds for `Retry-After` (429 and 503).
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    pub fn too_large(message: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", message)
    }

    /// 408: the request body stalled (see `body_timeout`).
    pub fn body_timed_out(error: impl std::fmt::Display) -> Self {
        Self::new(
            StatusCode::REQUEST_TIMEOUT,
            "request_timeout",
            format!("{error}; send the whole body promptly"),
        )
    }

    pub fn rate_limited(message: impl Into<String>, retry_after_secs: u64) -> Self {
        ApiError {
            retry_after: Some(retry_after_secs.max(1)),
            ..Self::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited", message)
        }
    }

    /// Logs `error` with its whole chain and answers a generic 500.
    pub fn internal(error: impl std::fmt::Display) -> Self {
        tracing::error!(error = %error, "internal error while serving a request");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error; the server log has the details",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        debug_assert!(
            ERROR_CODES.contains(&self.code),
            "error code {:?} is missing from ERROR_CODES (the OpenAPI document's enum)",
            self.code
        );
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code.to_owned(),
                message: self.message,
            },
        };
        let mut response = (self.status, axum::Json(body)).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        use StoreError::*;
        match error {
            UnknownTenant(_) => Self::not_found(error.to_string()),
            UnknownJobType { ref job_type, .. } => Self::new(
                StatusCode::NOT_FOUND,
                "job_type_not_found",
                format!(
                    "unknown job type {job_type:?}: register it first (PUT /v1/job-types/{job_type})"
                ),
            ),
            InvalidInput { .. } => Self::bad_request(error.to_string()),
            PayloadTooLarge { .. } => Self::too_large(error.to_string()),
            NotFound { entity, ref id } => Self::not_found(format!("{entity} {id} not found")),
            IllegalTransition { .. } | Conflict { .. } => {
                Self::new(StatusCode::CONFLICT, "conflict", error.to_string())
            }
            KeyContended { .. } => ApiError {
                retry_after: Some(1),
                ..Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "contended",
                    error.to_string(),
                )
            },
            ref e if e.is_transient() => {
                tracing::warn!(error = %e, "database unavailable while serving a request");
                ApiError {
                    retry_after: Some(1),
                    ..Self::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "unavailable",
                        "the database is unavailable; retry shortly",
                    )
                }
            }
            other => Self::internal(other),
        }
    }
}

/// The code used for a rejection of axum's own extractors, by status.
fn rejection(status: StatusCode, text: String) -> ApiError {
    match status {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::too_large(format!(
            "request body too large ({text}); see the tenant's limits"
        )),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::new(
            status,
            "unsupported_media_type",
            format!("{text}; send Content-Type: application/json"),
        ),
        s if s.is_server_error() => ApiError::internal(text),
        _ => ApiError::bad_request(text),
    }
}

/// `axum::Json` with rejections in the API's error shape (the message names the field
/// or the syntax problem).
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(value)) => Ok(ApiJson(value)),
            Err(e) if super::body_timeout::is_timeout(&e) => {
                Err(ApiError::body_timed_out(e.body_text()))
            }
            Err(e @ JsonRejection::JsonDataError(_))
            | Err(e @ JsonRejection::JsonSyntaxError(_)) => {
                Err(ApiError::bad_request(e.body_text()))
            }
            Err(e) => Err(rejection(e.status(), e.body_text())),
        }
    }
}

/// `axum::extract::Query` with rejections in the API's error shape.
#[derive(Debug)]
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| ApiQuery(q.0))
            .map_err(|e: QueryRejection| rejection(e.status(), e.body_text()))
    }
}

/// `axum::extract::Path` with rejections in the API's error shape (a non-numeric job id
/// is a 400 naming the problem).
#[derive(Debug)]
pub struct ApiPath<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| ApiPath(p.0))
            .map_err(|e: PathRejection| rejection(e.status(), e.body_text()))
    }
}

/// Fallback for paths no route matches.
pub async fn route_not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "route_not_found",
        format!(
            "no route for {}; GET /v1/openapi.json lists them",
            uri.path()
        ),
    )
}

/// Fallback for a known path with a method it does not serve.
pub async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{method} is not served on {}", uri.path()),
    )
}

#[cfg(test)]
mod codes_tests {
    use super::ERROR_CODES;

    /// Every code the sources answer with (a status constant, then the code literal: every
    /// `ApiError::new` call) is in [`ERROR_CODES`], and every listed code is used.
    #[test]
    fn the_documented_codes_are_the_codes_answered() {
        let mut used = std::collections::BTreeSet::new();
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/src/api");
        let mut folders = vec![std::path::PathBuf::from(root)];
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(&folder).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    folders.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    for piece in text.split("StatusCode::").skip(1) {
                        let Some((_, rest)) = piece.split_once(',') else {
                            continue;
                        };
                        let rest = rest.trim_start();
                        if let Some(code) = rest.strip_prefix('"').and_then(|r| r.split('"').next())
                            && !code.is_empty()
                            && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
                        {
                            used.insert(code.to_owned());
                        }
                    }
                }
            }
        }
        let listed: std::collections::BTreeSet<String> =
            ERROR_CODES.iter().map(|c| c.to_string()).collect();
        assert_eq!(
            used, listed,
            "ERROR_CODES and the codes the handlers answer differ"
        );
    }
}
