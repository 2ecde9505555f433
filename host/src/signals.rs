//! The one signal handler of every long-running command (`sluice worker`, `serve`,
//! `scheduler`): the first SIGTERM or SIGINT asks for a graceful shutdown, a second one
//! ends the process at once (exit code 130).
//!
//! Owns the Unix signal streams. Must not decide what a graceful shutdown does (each
//! command's services watch the token).

use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// A token cancelled at the first SIGTERM/SIGINT, after logging `graceful` (what the
/// process does now). Installed before anything slow, so a signal during start-up is a
/// graceful shutdown too. A second signal exits at once.
pub fn shutdown_on_signal(graceful: &'static str) -> CancellationToken {
    let shutdown = CancellationToken::new();
    let (mut term, mut int) = match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(term), Ok(int)) => (term, int),
        (Err(error), _) | (_, Err(error)) => {
            warn!(%error, "cannot install signal handlers; stop this process with SIGKILL");
            return shutdown;
        }
    };
    let token = shutdown.clone();
    tokio::spawn(async move {
        tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
        info!("signal received: {graceful} (signal again to stop at once)");
        token.cancel();
        tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
        std::process::exit(130);
    });
    shutdown
}
