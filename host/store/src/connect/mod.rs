//! Opening connections to the queue database: the URL forms psql accepts (TLS modes and
//! certificates, several hosts, `target_session_attrs`), the `application_name` each
//! process shows in `pg_stat_activity`, and following a primary that moves.
//!
//! Owns: turning a URL into a pool ([`open`]) and failures to connect into messages
//! that name the parameter to change. See docs/postgres.md for the URL forms.
//! Must not: run queue statements (the families of operations do), or hide a failure
//! to connect behind a retry loop of its own beyond the pool's acquire timeout.
//!
//! Modules import downward only:
//! 1. `failover`: host selection and the watcher
//! 2. `url`, `explain`: the URL's meaning and the wording of failures

mod explain;
mod failover;
mod url;

use std::sync::Arc;
use std::time::Duration;

use sqlx::PgPool;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::error::ConnectError;

/// A pool and, for a URL with several hosts, the guard of its failover watcher (the
/// watcher stops when the last clone of the guard is dropped).
pub struct Opened {
    pub pool: PgPool,
    pub watcher: Option<Arc<DropGuard>>,
    /// The URL's hosts, for messages ([`ConnectError::Pool`]).
    pub addresses: String,
}

/// Connects a pool of `max_connections` to `url`, whose connections say
/// `application_name` unless the URL sets one. One connection is opened first, on its
/// own, so an unreachable server fails at once with the reason (refused, unknown host,
/// authentication, a certificate) and the address, instead of the pool retrying until
/// its acquire timeout and reporting only that it timed out.
pub async fn open(
    url: &str,
    application_name: &str,
    max_connections: u32,
    timeout: Duration,
) -> Result<Opened, ConnectError> {
    let target = url::parse(url, application_name)?;
    let addresses = target.addresses().join(",");
    let hosts = failover::Hosts::new(target);
    hosts.choose(timeout).await?;
    let pool = hosts
        .pool_options(max_connections)
        .acquire_timeout(timeout)
        .connect_with(hosts.current())
        .await
        .map_err(|error| ConnectError::Pool {
            addresses: addresses.clone(),
            error,
        })?;
    let watcher = hosts.several().then(|| {
        let stop = CancellationToken::new();
        tokio::spawn(failover::watch(hosts.clone(), pool.clone(), stop.clone()));
        Arc::new(stop.drop_guard())
    });
    Ok(Opened {
        pool,
        watcher,
        addresses,
    })
}
