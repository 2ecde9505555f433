//! `sluice-store`: every SQL statement Sluice runs, the migrations runner, and
//! LISTEN/NOTIFY. Nothing else in the project speaks SQL.
//!
//! Owns: the `sluice` schema (see `migrations/` at the repository root), the job state
//! machine (`docs/state-machine.md`), tenants, components and job types as stored rows.
//!
//! Must not: touch wasmtime or validate Wasm bytes (the sandbox does), read a host clock
//! for queue timing (every timestamp is the database's `now()`), or leave a job state
//! change to more than one SQL statement.
//!
//! Shape of the crate: [`Store`] wraps a [`sqlx::PgPool`]; each module adds one family of
//! operations to it (`impl Store` blocks) and keeps its SQL as named constants next to the
//! code that binds it.

mod admin;
mod components;
mod depth;
mod enqueue;
mod error;
mod fairness;
mod finish;
mod history;
mod job_types;
mod lease;
mod listen;
mod maintenance;
mod reap;
mod retention;
mod schedules;
mod schema;
mod stats;
mod tenants;
mod text;
mod time_range;
mod tokens;
mod types;

use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

/// How long connecting to the database may take before it is reported as failed.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

pub use admin::{AttemptRecord, CancelResult, JobFilter, JobRecord, JobSummary};
pub use components::{ComponentRecord, NewComponent};
pub use enqueue::{Enqueued, NewJob, RunAt};
pub use error::StoreError;
pub use finish::{Backoff, Completion, FailResult, Failure};
pub use job_types::{JobTypeRecord, JobTypeSpec};
pub use lease::{ClaimRequest, ClaimedJob, HeartbeatReport};
pub use listen::{CANCEL_CHANNEL, JOBS_CHANNEL, Notice, StoreListener};
pub use maintenance::{MaintenanceRun, RETENTION_LOCK_KEY, RetentionReport};
pub use reap::ReapedJob;
pub use retention::{PruneReport, RetentionPolicy};
pub use schedules::{
    CatchUp, DEFAULT_MAX_CATCH_UP, FireReport, NewSchedule, ON_TIME_GRACE, ScheduleRecord,
    parse_cron, parse_tz,
};
pub use stats::{StateCounts, Stats, TypeStats};
pub use tenants::{TenantLimits, TenantRecord};
pub use time_range::{MAX_DELAY, RUN_AT_MAX, RUN_AT_MIN};
pub use tokens::{NewToken, TOKEN_PREFIX, TokenIdentity, TokenRecord, token_hash};
pub use types::{AttemptOutcome, JobState, KeyScope, Lease, priority};

/// The schema migrations in `migrations/` at the repository root, embedded at compile
/// time. Tests use it as `#[sqlx::test(migrator = "sluice_store::MIGRATOR")]`.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations");

/// Payload limit applied when the tenant has no `max_payload_bytes` of its own: 1 MiB.
pub const DEFAULT_MAX_PAYLOAD_BYTES: i64 = 1024 * 1024;

/// Handle to the queue database. Cheap to clone (it is a pool handle plus settings).
#[derive(Clone, Debug)]
pub struct Store {
    pool: PgPool,
    default_max_payload_bytes: i64,
}

impl Store {
    /// Connects a pool of `max_connections` (default 10) to `url`.
    pub async fn connect(url: &str) -> anyhow::Result<Store> {
        Self::connect_with(url, 10).await
    }

    /// Connects a pool of `max_connections` to `url`. One connection is opened first, on
    /// its own, so an unreachable server fails at once with the reason (connection
    /// refused, unknown host, authentication) and the address, instead of the pool
    /// retrying until its acquire timeout and reporting only that it timed out.
    pub async fn connect_with(url: &str, max_connections: u32) -> anyhow::Result<Store> {
        use anyhow::Context as _;
        use sqlx::Connection as _;
        let options: PgConnectOptions = url.parse().context(
            "the database URL is not a PostgreSQL connection string (postgres://user@host:port/db)",
        )?;
        let address = match options.get_socket() {
            Some(socket) => socket.display().to_string(),
            None => format!("{}:{}", options.get_host(), options.get_port()),
        };
        let first =
            tokio::time::timeout(CONNECT_TIMEOUT, sqlx::PgConnection::connect_with(&options))
                .await
                .map_err(|_| anyhow::anyhow!("no answer within {CONNECT_TIMEOUT:?}"))
                .and_then(|r| r.map_err(anyhow::Error::from))
                .with_context(|| {
                    format!(
                        "cannot connect to PostgreSQL at {address} (database {:?})",
                        options.get_database().unwrap_or("(default)")
                    )
                })?;
        first.close().await.ok();
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(CONNECT_TIMEOUT)
            .connect_with(options)
            .await
            .with_context(|| format!("connect to the Sluice database at {address}"))?;
        Ok(Store::new(pool))
    }

    /// Wraps an existing pool.
    pub fn new(pool: PgPool) -> Store {
        Store {
            pool,
            default_max_payload_bytes: DEFAULT_MAX_PAYLOAD_BYTES,
        }
    }

    /// Sets the payload limit used for tenants without their own `max_payload_bytes`.
    pub fn with_default_max_payload_bytes(mut self, bytes: i64) -> Store {
        self.default_max_payload_bytes = bytes;
        self
    }

    /// Applies pending migrations; a no-op when the schema is current.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        MIGRATOR
            .run(&self.pool)
            .await
            .map_err(|e| StoreError::Database(e.into()))
    }
}

/// Converts a duration to whole microseconds for SQL (`$n * interval '1 microsecond'`),
/// refusing zero when `positive` and anything that does not fit an `i64`.
pub(crate) fn micros(field: &'static str, d: Duration, positive: bool) -> Result<i64, StoreError> {
    let us = i64::try_from(d.as_micros()).map_err(|_| StoreError::InvalidInput {
        field,
        message: format!("{d:?} is too long"),
    })?;
    if positive && us <= 0 {
        return Err(StoreError::InvalidInput {
            field,
            message: "must be at least one microsecond".into(),
        });
    }
    Ok(us)
}
