//! The background services a host runs beside (or without) its claim loop: the reaper of
//! expired leases, the waker of waiting durable jobs, the cron scheduler, retention and a
//! scheduler's registry heartbeat.
//! Each has one shape: a config, a [`Service::run_once`] that does one pass and returns a
//! report (logged and counted in the metrics by the service itself), and the shared
//! [`run`] loop that staggers the first pass, waits as the report says between passes,
//! and stops on shutdown. `Host::run` (the `sluice` binary's `host`) starts and stops them.
//!
//! Must not: claim or run jobs, speak SQL (each pass is one or two store calls), or
//! import the worker, the HTTP API, the dashboard or the CLI.

pub mod heartbeat;
pub mod reaper;
pub mod retention;
pub mod scheduler;
pub mod waker;

use std::fmt::Debug;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::info;

/// One background service. See the module comment.
pub trait Service: Send + 'static {
    /// What one pass did.
    type Report: Debug + Send;

    /// Its name in logs.
    const NAME: &'static str;

    /// How long to wait before the first pass (a random part of the period, so that
    /// hosts started together do not all ask at once; zero to start at once).
    fn first_wait(&self) -> Duration;

    /// Does one pass: never fails (errors are logged, counted and reported).
    fn run_once(&mut self) -> impl Future<Output = Self::Report> + Send;

    /// How long to wait after a pass that reported `report`.
    fn wait_after(&self, report: &Self::Report) -> Duration;
}

/// Runs `service` until `shutdown` fires. A pass in progress is abandoned on shutdown:
/// every service's pass is safe to stop between statements.
pub async fn run<S: Service>(mut service: S, shutdown: CancellationToken) {
    info!(service = S::NAME, "started");
    let mut wait = service.first_wait();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tokio::time::sleep(wait) => {}
        }
        let report = tokio::select! {
            _ = shutdown.cancelled() => break,
            report = service.run_once() => report,
        };
        wait = service.wait_after(&report);
    }
    info!(service = S::NAME, "stopped");
}

/// A random part of `period`: the staggered first wait.
pub(crate) fn stagger(period: Duration) -> Duration {
    period.mul_f64(rand::random::<f64>())
}
