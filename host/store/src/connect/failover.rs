//! Host selection for a URL with several hosts (libpq's multi-host form), and for
//! `target_session_attrs=read-write`: the pool connects to the first host that answers
//! (and takes writes, when asked), and follows the primary when it moves.
//!
//! Owns: [`Hosts`] (which host the pool uses, since when), the checks a new pooled
//! connection passes, and the watcher that moves the pool to another host.
//! Must not: retry statements (callers retry what `StoreError::is_transient` says), or
//! pick a host that refused the check.
//!
//! How a failover is followed: a watcher task keeps one probe connection to the current
//! host and asks it every [`PROBE_EVERY`] whether it still takes writes; when it does
//! not answer, or answers no, the watcher tries the hosts (the current one first, then
//! the URL's order) and points the pool at the first that passes. A pooled connection
//! opened before that switch is closed instead of handed out, and a new connection that
//! lands on a read-only server is refused (the pool then retries until its acquire
//! timeout, by which time the watcher has moved it).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection as _, PgConnection, PgPool};
use tokio_util::sync::CancellationToken;

use super::explain::explain;
use super::url::{SessionAttrs, Target, address};
use crate::error::ConnectError;

/// How often the watcher asks the current host whether it still is the primary.
pub const PROBE_EVERY: Duration = Duration::from_millis(500);
/// How long one probe (connect and ask) may take before the host counts as down.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

const WRITABLE: &str = include_str!("../../sql/connect/writable.sql");

/// The hosts of one URL and which of them the pool uses.
#[derive(Debug)]
pub struct Hosts {
    target: Target,
    current: AtomicUsize,
    switched: std::sync::Mutex<Instant>,
    recheck: tokio::sync::Notify,
}

impl Hosts {
    pub fn new(target: Target) -> Arc<Hosts> {
        Arc::new(Hosts {
            target,
            current: AtomicUsize::new(0),
            switched: std::sync::Mutex::new(Instant::now()),
            recheck: tokio::sync::Notify::new(),
        })
    }

    /// The options of the host in use.
    pub fn current(&self) -> PgConnectOptions {
        self.target.hosts[self.current.load(Ordering::Acquire)].clone()
    }

    /// Whether connections must land on a server that takes writes.
    fn read_write(&self) -> bool {
        self.target.attrs == SessionAttrs::ReadWrite
    }

    /// Whether a watcher is needed: more than one host to choose from.
    pub fn several(&self) -> bool {
        self.target.hosts.len() > 1
    }

    /// Connects to host `i` and checks it; the connection on success, else why not (with
    /// the fix, when [`explain`] knows it).
    async fn probe(&self, i: usize, limit: Duration) -> Result<PgConnection, String> {
        let options = &self.target.hosts[i];
        let mut conn = tokio::time::timeout(limit, PgConnection::connect_with(options))
            .await
            .map_err(|_| format!("no answer within {limit:?}"))?
            .map_err(|e| match explain(&e, options) {
                Some(why) => format!("{why}: {e}"),
                None => e.to_string(),
            })?;
        if self.read_write() && !writable(&mut conn).await.map_err(|e| e.to_string())? {
            return Err(
                "the server is read-only (a standby, or default_transaction_read_only \
                        is on) and the URL asks for target_session_attrs=read-write"
                    .into(),
            );
        }
        Ok(conn)
    }

    /// The first host, starting at `first` and wrapping around, that passes the probe;
    /// with its connection. On failure: why each host failed.
    async fn find(
        &self,
        first: usize,
        limit: Duration,
    ) -> Result<(usize, PgConnection), ConnectError> {
        let n = self.target.hosts.len();
        let mut reasons = Vec::new();
        for i in (0..n).map(|k| (first + k) % n) {
            match self.probe(i, limit).await {
                Ok(conn) => return Ok((i, conn)),
                Err(why) => reasons.push((i, why)),
            }
        }
        let options = &self.target.hosts[0];
        let database = options.get_database().unwrap_or("(default)").to_owned();
        if n == 1 {
            let (_, why) = reasons.pop().expect("one host, one reason");
            return Err(ConnectError::Unreachable(format!(
                "cannot connect to PostgreSQL at {} (database {database:?}): {why}",
                address(options)
            )));
        }
        let each: Vec<String> = reasons
            .iter()
            .map(|(i, why)| format!("{}: {why}", address(&self.target.hosts[*i])))
            .collect();
        let wanted = if self.read_write() {
            "that takes writes"
        } else {
            "that answers"
        };
        Err(ConnectError::Unreachable(format!(
            "cannot connect to a PostgreSQL server {wanted} among {} (database {database:?}): {}",
            self.target.addresses().join(", "),
            each.join("; ")
        )))
    }

    /// Finds the first host to use (in the URL's order), as the pool's starting point.
    pub async fn choose(&self, limit: Duration) -> Result<(), ConnectError> {
        let (i, conn) = self.find(0, limit).await?;
        conn.close().await.ok();
        self.current.store(i, Ordering::Release);
        Ok(())
    }

    /// Pool options whose connections pass the checks: on a server that takes writes
    /// (when asked), and not opened before the last switch of host.
    pub fn pool_options(self: &Arc<Hosts>, max_connections: u32) -> PgPoolOptions {
        let mut options = PgPoolOptions::new().max_connections(max_connections);
        if self.read_write() {
            let hosts = self.clone();
            options = options.after_connect(move |conn, _meta| {
                let hosts = hosts.clone();
                Box::pin(async move {
                    if writable(conn).await? {
                        return Ok(());
                    }
                    hosts.recheck.notify_one();
                    Err(sqlx::Error::Protocol(
                        "connected to a read-only server (a standby): waiting for the primary"
                            .into(),
                    ))
                })
            });
        }
        if self.several() {
            let hosts = self.clone();
            options = options.before_acquire(move |_conn, meta| {
                let fresh = meta.age <= hosts.since_switch();
                Box::pin(async move { Ok(fresh) })
            });
        }
        options
    }

    fn since_switch(&self) -> Duration {
        self.switched
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .elapsed()
    }
}

/// Whether the server behind `conn` takes writes.
async fn writable(conn: &mut PgConnection) -> Result<bool, sqlx::Error> {
    use sqlx::Row as _;
    let row = sqlx::raw_sql(sqlx::AssertSqlSafe(WRITABLE))
        .fetch_one(&mut *conn)
        .await?;
    row.try_get::<bool, _>(0)
}

/// Follows the primary for `pool` until `stop` is cancelled (see the module's doc).
pub async fn watch(hosts: Arc<Hosts>, pool: PgPool, stop: CancellationToken) {
    let mut probe: Option<PgConnection> = None;
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = hosts.recheck.notified() => {}
            _ = tokio::time::sleep(PROBE_EVERY) => {}
        }
        if let Some(conn) = probe.as_mut() {
            let ok = tokio::time::timeout(PROBE_TIMEOUT, async {
                match hosts.read_write() {
                    true => writable(conn).await.unwrap_or(false),
                    false => conn.ping().await.is_ok(),
                }
            })
            .await
            .unwrap_or(false);
            if ok {
                continue;
            }
        }
        probe = None;
        let current = hosts.current.load(Ordering::Acquire);
        let Ok((found, conn)) = hosts.find(current, PROBE_TIMEOUT).await else {
            continue;
        };
        probe = Some(conn);
        if found != current {
            let options = hosts.target.hosts[found].clone();
            pool.set_connect_options(options);
            *hosts
                .switched
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()) = Instant::now();
            hosts.current.store(found, Ordering::Release);
            tracing::warn!(
                from = %address(&hosts.target.hosts[current]),
                to = %address(&hosts.target.hosts[found]),
                "the database moved: connecting to the new primary"
            );
        }
    }
}
