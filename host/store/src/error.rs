//! The store's error type: one variant per case a caller must branch on.
//!
//! Owns: [`StoreError`] (with [`LiveWorker`], what `WorkerIdInUse` carries) and the
//! mapping of Postgres error codes onto it; [`ConnectError`], why opening connections
//! failed.
//! Must not: log (errors are logged where they are handled, not where they pass).

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::types::JobState;

/// Why a store operation refused or failed. Each message names the problem and what to
/// do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No tenant with this id. Create it first (`sluice tenants create <id>`).
    #[error("unknown tenant {0:?}: create it first (sluice tenants create {0})")]
    UnknownTenant(String),

    /// The tenant has no job type with this name.
    #[error(
        "unknown job type {job_type:?} for tenant {tenant:?}: register it with a component first"
    )]
    UnknownJobType {
        /// The tenant looked in.
        tenant: String,
        /// The job type name that is not registered for it.
        job_type: String,
    },

    /// An argument is out of range or malformed; nothing was written.
    #[error("invalid {field}: {message}")]
    InvalidInput {
        /// The argument or request field at fault (`priority`, `name`, ...).
        field: &'static str,
        /// What is wrong and what is accepted.
        message: String,
    },

    /// The request is well formed but clashes with what exists (a taken name, a full
    /// quota); nothing was written. `field` names the request field it is about.
    #[error("{field}: {message}")]
    Conflict {
        /// The request field the clash is about.
        field: &'static str,
        /// What it clashes with.
        message: String,
    },

    /// The payload is bigger than the tenant's limit; nothing was written.
    #[error(
        "payload is {size} bytes, over the limit of {limit} bytes: store large data elsewhere and pass a reference"
    )]
    PayloadTooLarge {
        /// The payload's size, in bytes.
        size: i64,
        /// The tenant's `max_payload_bytes`, or the host default.
        limit: i64,
    },

    /// The thing does not exist (or belongs to another tenant).
    #[error("{entity} {id} not found (or it belongs to another tenant)")]
    NotFound {
        /// What was looked for (`job`, `component`, `schedule`, ...).
        entity: &'static str,
        /// The id or name it was looked for by, as given.
        id: String,
    },

    /// The job is in a state where this action makes no sense; nothing changed.
    #[error("job {id} is {state}: cannot {action}")]
    IllegalTransition {
        /// The job's id.
        id: i64,
        /// The state it is in, which refuses the action.
        state: JobState,
        /// What was asked (`cancel`, `retry`, ...), with why it is refused where that
        /// is not the state alone.
        action: &'static str,
    },

    /// The lease no longer holds (it expired and the job was reaped or claimed again,
    /// or the job was cancelled): the caller's result is dropped and nothing changed.
    #[error(
        "lease on job {job_id} lost: the job was reaped, cancelled or claimed by another worker; drop this attempt's result"
    )]
    LeaseLost {
        /// The job whose lease was presented.
        job_id: i64,
    },

    /// A completion's follow-up jobs could not be inserted (their job type was deleted
    /// since the guest asked, or a payload no longer fits the tenant's limit): nothing of
    /// that attempt was written, and the job is still `running` under its lease, for the
    /// caller to record the attempt as failed instead.
    #[error("job {job_id}: follow-up jobs refused: {message}")]
    FollowUpRefused {
        /// The parent job, still running under its lease.
        job_id: i64,
        /// Which follow-up was refused and why; fit for the attempt's error.
        message: String,
    },

    /// An idempotency key kept changing hands while enqueueing (it was freed and taken
    /// again between retries many times). Retry the enqueue later.
    #[error(
        "idempotency key {key:?} of tenant {tenant:?} kept changing hands during enqueue; retry later"
    )]
    KeyContended {
        /// The tenant the key belongs to.
        tenant: String,
        /// The idempotency key.
        key: String,
    },

    /// The database's schema is not the one this binary was built for: migrations are
    /// missing (`database` lower, or `None` for no Sluice schema at all) or the database
    /// was migrated by a newer binary (`database` higher).
    #[error("{}", schema_mismatch_message(*database, *binary))]
    SchemaMismatch {
        /// The newest migration applied to the database; `None`: no Sluice schema.
        database: Option<i64>,
        /// The newest migration this binary carries.
        binary: i64,
    },

    /// A process asked to register under the id of a live one (not stopped, heartbeat
    /// younger than its lease): nothing was written. `live` describes that process, when
    /// its row was visible (`None`: it registered at the same moment).
    #[error("{}", worker_id_in_use_message(id, live.as_ref()))]
    WorkerIdInUse {
        /// The worker id asked for.
        id: String,
        /// The live process holding it, when its row was visible.
        live: Option<LiveWorker>,
    },

    /// Postgres or the connection failed.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),

    /// One error shared by every item of a batch whose statement failed as a whole
    /// (`StoreError` itself is not `Clone`). Keeps what callers branch on:
    /// [`StoreError::is_transient`] answers for the shared error.
    #[error("{0}")]
    Shared(std::sync::Arc<StoreError>),
}

impl StoreError {
    /// True when the same call may succeed if made again: the database was unreachable,
    /// restarting, or aborted the statement for a concurrency reason. A worker retries
    /// these instead of giving up an attempt it already ran.
    pub fn is_transient(&self) -> bool {
        let err = match self {
            StoreError::Database(err) => err,
            StoreError::Shared(shared) => return shared.is_transient(),
            _ => return false,
        };
        match err {
            sqlx::Error::Io(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::Tls(_)
            | sqlx::Error::Protocol(_)
            | sqlx::Error::WorkerCrashed => true,
            sqlx::Error::Database(db) => db.code().is_some_and(|code| {
                // 08: connection exception; 57P01-03: shutdown / cannot connect now;
                // 40001 / 40P01: serialization failure / deadlock; 25006: read-only
                // transaction (the statement reached a primary that became a standby
                // in a failover: an outage, never the job's fault).
                code.starts_with("08")
                    || matches!(
                        code.as_ref(),
                        "57P01" | "57P02" | "57P03" | "40001" | "40P01" | "25006"
                    )
            }),
            _ => false,
        }
    }

    /// This error in a form that can be handed to many callers (a batch's items): a
    /// [`StoreError::Shared`] that keeps its transience.
    pub fn shared(self) -> std::sync::Arc<StoreError> {
        match self {
            StoreError::Shared(shared) => shared,
            other => std::sync::Arc::new(other),
        }
    }

    pub(crate) fn job_not_found(id: i64) -> StoreError {
        StoreError::NotFound {
            entity: "job",
            id: id.to_string(),
        }
    }
}

fn schema_mismatch_message(database: Option<i64>, binary: i64) -> String {
    match database {
        None => "the database has no Sluice schema: run `sluice migrate` first".into(),
        Some(db) if db < binary => format!(
            "the database schema is at migration {db}, this sluice needs {binary}: run `sluice migrate` (stop the workers first)"
        ),
        Some(db) => format!(
            "the database schema is at migration {db}, newer than this sluice knows ({binary}): run the newer sluice binary"
        ),
    }
}

/// Why opening connections to the database failed ([`Store::connect`],
/// [`Store::listen_at`]): the URL, a file it names, or the servers it names. Each
/// message is whole (it names the URL parameter or server setting to change), so it is
/// printed as is.
///
/// [`Store::connect`]: crate::Store::connect
/// [`Store::listen_at`]: crate::Store::listen_at
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The URL cannot be used as written: not a `postgres://` connection string, an
    /// unsupported `target_session_attrs`, or TLS settings that contradict each other.
    #[error("{0}")]
    BadUrl(String),

    /// A file the URL names (`sslrootcert`, `sslcert`, `sslkey`) cannot be read.
    #[error("{key}={path} in the database URL: cannot read the file: {error}")]
    UnreadableFile {
        /// The URL parameter.
        key: String,
        /// The file it names (percent-decoded).
        path: String,
        /// Why it cannot be read.
        error: std::io::Error,
    },

    /// No host of the URL could be used. The message says why each one failed:
    /// refused, unknown host, authentication, a certificate (with the parameter to
    /// change), read-only when the URL asks for writes, or no answer in time.
    #[error("{0}")]
    Unreachable(String),

    /// A host passed the first connection, but the pool (or a listener) could not open
    /// or use its own.
    #[error("connect to the Sluice database at {addresses}: {error}")]
    Pool {
        /// The URL's hosts, `host:port` (or socket path), comma-separated.
        addresses: String,
        /// What the driver said.
        error: sqlx::Error,
    },
}

/// The live process holding an id that another asked for
/// ([`StoreError::WorkerIdInUse`]).
#[derive(Clone, Debug, PartialEq)]
pub struct LiveWorker {
    /// `worker` or `scheduler`.
    pub kind: String,
    /// The host the live process runs on.
    pub hostname: String,
    /// Its process id on that host.
    pub pid: i32,
    /// Its last heartbeat (the database's clock).
    pub last_heartbeat: DateTime<Utc>,
    /// Seconds between its last heartbeat and the refused start (database clock).
    pub seconds_ago: f64,
    /// Its lease: it counts as live until this long passes without a heartbeat.
    pub lease: Duration,
}

fn worker_id_in_use_message(id: &str, live: Option<&LiveWorker>) -> String {
    let who = match live {
        Some(w) => format!(
            "by a live {} (host {}, pid {}), last seen {:.1}s ago at {}, with a lease of {:?}",
            w.kind,
            w.hostname,
            w.pid,
            w.seconds_ago,
            w.last_heartbeat
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            w.lease
        ),
        None => "by a live process that registered it just now".into(),
    };
    format!(
        "worker id {id:?} is in use {who}: give this process another --worker-id, or stop that \
         one first (its id is free again once it stops, or once its lease passes without a heartbeat)"
    )
}

/// True when `err` is a unique violation (SQLSTATE 23505) on `constraint`.
pub(crate) fn is_unique_violation(err: &sqlx::Error, constraint: &str) -> bool {
    match err {
        sqlx::Error::Database(db) => {
            db.code().as_deref() == Some("23505") && db.constraint() == Some(constraint)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_batch_error_keeps_whether_it_is_transient() {
        let down = StoreError::Database(sqlx::Error::PoolTimedOut).shared();
        assert!(StoreError::Shared(down.clone()).is_transient());
        assert!(
            StoreError::Shared(down)
                .to_string()
                .contains("database error")
        );
        let refused = StoreError::LeaseLost { job_id: 1 }.shared();
        assert!(!StoreError::Shared(refused).is_transient());
    }
}
