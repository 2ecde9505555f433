//! The connection loop behind `sluice serve`: accepts TCP connections and serves each
//! with hyper's HTTP/1, with a header read timeout (axum's own `serve` sets none, so a
//! client that opens a connection and sends half a request line would hold it forever),
//! and shuts down gracefully: stop accepting, let requests in flight finish.
//!
//! Owns: connection-level timeouts. Must not: know routes or handlers (that is
//! `app`); the request-body timeout is `http::body_timeout`, a middleware.

use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::sync::watch;
use tower::ServiceExt as _;

/// Default longest wait for a request's line and headers.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves `app` on `listener` until `shutdown` completes, then finishes the requests in
/// flight; request headers must arrive within [`DEFAULT_HEADER_TIMEOUT`].
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, app, DEFAULT_HEADER_TIMEOUT, shutdown).await
}

/// Serves `app` on `listener` until `shutdown` completes, then finishes the requests in
/// flight. A connection that does not deliver a request's headers within
/// `header_timeout` (counted from when the server starts waiting for them, idle
/// keep-alive time included) is closed.
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    app: Router,
    header_timeout: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (stop_tx, stop_rx) = watch::channel(false);
    let (done_tx, done_rx) = watch::channel(());
    let mut shutdown = pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of descriptors and the like: back off instead of spinning.
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let service = TowerToHyperService::new(
            app.clone()
                .map_request(|request: Request<Incoming>| request.map(axum::body::Body::new)),
        );
        let mut stop = stop_rx.clone();
        let done = done_rx.clone();
        tokio::spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout);
            let mut connection = pin!(builder.serve_connection(TokioIo::new(stream), service));
            // Ends when the server stops; the borrow guard is dropped before any await.
            let stopping = async move {
                let _ = stop.wait_for(|stopping| *stopping).await.map(drop);
            };
            let ended = tokio::select! {
                result = connection.as_mut() => result,
                () = stopping => {
                    // Idle connections close now; one mid-request finishes it first.
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(error) = ended {
                tracing::debug!(%peer, %error, "connection ended with an error");
            }
            drop(done);
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    drop(done_rx);
    done_tx.closed().await;
    Ok(())
}
