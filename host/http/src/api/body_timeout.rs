//! The request-body read timeout: a client that declares a body and then stops sending
//! it must not hold a connection (and a handler) forever. Every request body is wrapped
//! so that each wait for its next piece is bounded by `ServeConfig::body_timeout`; when
//! it runs out, reading the body fails with [`BodyTimedOut`], which the extractors answer
//! with 408 `request_timeout` (see `error.rs`).
//!
//! Must not: buffer the body (handlers keep their own size limits and streaming), or
//! bound the handler's own work (a slow database is not the client's fault).

use std::time::Duration;

use axum::body::{Body, HttpBody as _};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt as _;

/// Reading the request body waited longer than the server's body timeout.
#[derive(Debug, thiserror::Error)]
#[error("the request body stalled: nothing arrived for {0:?}")]
pub struct BodyTimedOut(pub Duration);

/// Middleware: wraps the request body in the idle timeout `limit`.
pub async fn limit_body_reads(
    State(limit): State<Duration>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, body) = request.into_parts();
    if body.size_hint().exact() == Some(0) {
        return next.run(Request::from_parts(parts, body)).await;
    }
    let chunks = body.into_data_stream();
    let timed = futures::stream::unfold(Some(chunks), move |chunks| async move {
        let mut chunks = chunks?;
        match tokio::time::timeout(limit, chunks.next()).await {
            Ok(Some(Ok(bytes))) => Some((Ok(bytes), Some(chunks))),
            Ok(Some(Err(e))) => Some((Err(axum::BoxError::from(e)), None)),
            Ok(None) => None,
            // End the stream after the error: the connection is dropped with it.
            Err(_) => Some((Err(BodyTimedOut(limit).into()), None)),
        }
    });
    next.run(Request::from_parts(parts, Body::from_stream(timed)))
        .await
}

/// True when `error` (or anything in its source chain) is a [`BodyTimedOut`].
pub fn is_timeout(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(e) = next {
        if e.is::<BodyTimedOut>() {
            return true;
        }
        next = e.source();
    }
    false
}
