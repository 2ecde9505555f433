//! `GET /metrics`: refreshes the queue gauges (`Metrics::refresh_queue_gauges`, cached)
//! and answers with every metric as Prometheus text.
//!
//! Owns: the axum router other servers mount (`sluice serve`) and the small listener
//! `sluice worker --metrics-listen` runs. Must not: authenticate (the HTTP API decides
//! whether `/metrics` needs a token) or query the database on every scrape.

use std::net::SocketAddr;

use anyhow::Context;
use axum::Router;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prometheus_client::encoding::prometheus_text;
use sluice_shared::metrics::Metrics;
use sluice_store::Store;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

#[derive(Clone)]
struct Endpoint {
    store: Store,
    metrics: Metrics,
}

/// A router serving `GET /metrics` (no authentication; mount it where it should be).
pub fn router(store: Store, metrics: Metrics) -> Router {
    Router::new()
        .route("/metrics", get(scrape))
        .with_state(Endpoint { store, metrics })
}

/// Serves [`router`] on `addr` until `shutdown` fires. Returns the bound address (useful
/// with port 0) once listening; the server runs on a spawned task.
pub async fn serve(
    addr: SocketAddr,
    store: Store,
    metrics: Metrics,
    shutdown: CancellationToken,
) -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("listen for metrics on {addr}"))?;
    let bound = listener.local_addr().context("read the metrics address")?;
    info!(%bound, "serving metrics at http://{bound}/metrics");
    let app = router(store, metrics);
    tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await;
        if let Err(error) = served {
            warn!(%error, "metrics listener stopped");
        }
    });
    Ok(bound)
}

async fn scrape(State(endpoint): State<Endpoint>) -> Response {
    endpoint.metrics.refresh_queue_gauges(&endpoint.store).await;
    (
        [(CONTENT_TYPE, prometheus_text::CONTENT_TYPE)],
        endpoint.metrics.encode(),
    )
        .into_response()
}
