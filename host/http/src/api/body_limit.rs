//! The declared-length check: a request whose `Content-Length` is over its route's body
//! limit is answered 413 `payload_too_large` as soon as its headers are read, before a
//! byte of the body is, so a client that declares a huge body and sends it slowly cannot
//! hold a connection (and a handler) until the body timeout. The answer carries
//! `Connection: close`: the unread body is never drained.
//!
//! Owns: [`check_declared`] (the one rule, with its message) and the middleware
//! [`refuse_declared_over`] that applies it with a route group's fixed limit (the router
//! layers it on every group: JSON API routes, the dashboard's forms). A route whose limit
//! depends on the caller (component uploads: the tenant's `max_component_bytes`) calls
//! [`check_declared`] itself right after authentication, before reading.
//!
//! Must not: read or buffer the body. A body without a declared length (chunked) is
//! capped while it is read, by the extractor's limit (`DefaultBodyLimit`) or the
//! handler's own; `body_timeout` bounds its stalls.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// The declared body length, when there is one and it is a number.
pub fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
}

/// Refuses a body declared longer than `limit` bytes; `what` names the limit in the
/// message (`the server's --max-request-body`, `tenant "acme"'s component limit`).
pub fn check_declared(headers: &HeaderMap, limit: u64, what: &str) -> Result<(), ApiError> {
    match declared_length(headers) {
        Some(length) if length > limit => Err(ApiError::too_large(format!(
            "the request declares a body of {length} bytes, over {what} of {limit} bytes"
        ))),
        _ => Ok(()),
    }
}

/// The fixed body limit of a group of routes, and how the message names it.
#[derive(Clone, Copy, Debug)]
pub struct RouteLimit {
    pub bytes: u64,
    pub what: &'static str,
}

/// Middleware: 413 (with `Connection: close`) when the declared body is over the route
/// group's limit; otherwise the request goes on untouched.
pub async fn refuse_declared_over(
    State(limit): State<RouteLimit>,
    request: Request,
    next: Next,
) -> Response {
    match check_declared(request.headers(), limit.bytes, limit.what) {
        Ok(()) => next.run(request).await,
        Err(error) => closing(error),
    }
}

/// `error` as an answer that also closes the connection (its body was never read).
pub fn closing(error: ApiError) -> Response {
    let mut response = error.into_response();
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(length: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_LENGTH,
            HeaderValue::from_str(length).unwrap(),
        );
        headers
    }

    #[test]
    fn only_a_declared_length_over_the_limit_is_refused() {
        assert!(check_declared(&HeaderMap::new(), 10, "x").is_ok());
        assert!(check_declared(&headers("10"), 10, "x").is_ok());
        let error = check_declared(&headers("11"), 10, "the limit").unwrap_err();
        assert_eq!(error.status, 413);
        assert_eq!(error.code, "payload_too_large");
        assert!(error.message.contains("11 bytes, over the limit of 10"));
    }
}
