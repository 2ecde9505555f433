//! The worker registry (`sluice.workers`): which `sluice worker` and `sluice scheduler`
//! processes run, or ran, against this database.
//!
//! Owns: registering a process (one guarded upsert that refuses the id of a live one),
//! the heartbeat of a process that holds no jobs (a worker's row is renewed by the job
//! heartbeat, `lease.rs`, in the same statement), marking a registration stopped, listing
//! rows with their state read against the database clock, and pruning old rows.
//! Must not: read a host clock (lost means "no heartbeat for longer than the lease" by
//! `now()` of the database), or touch another registration than the caller's (stop and
//! heartbeat match the session of the start that made the row).

use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::{LiveWorker, Store, StoreError, micros};

/// Stopped and lost rows are deleted by retention this long after they stopped (or
/// their lease ran out): 7 days.
pub const WORKER_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// What a registered process runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkerKind {
    /// `sluice worker`: claims and runs jobs.
    Worker,
    /// `sluice scheduler`: fires schedules and runs retention, claims nothing.
    Scheduler,
}

impl WorkerKind {
    /// `"worker"`, `"scheduler"`: how the kind is stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkerKind::Worker => "worker",
            WorkerKind::Scheduler => "scheduler",
        }
    }
}

/// A process asking to register.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewWorker {
    /// Its worker id: `locked_by` of the jobs it claims. Unique among live processes.
    pub id: String,
    /// Whether it runs jobs or schedules.
    pub kind: WorkerKind,
    /// The host name of its machine, shown in the registry.
    pub hostname: String,
    /// Its operating-system process id on that machine.
    pub pid: u32,
    /// The binary's version (`CARGO_PKG_VERSION`).
    pub version: String,
    /// The task contracts it runs (`"0.1"`, `"0.2"`); empty for a scheduler.
    pub contracts: Vec<String>,
    /// Attempts it runs at once (`None` for a scheduler).
    pub concurrency: Option<u32>,
    /// How long it may go without a heartbeat before its row counts as lost (a worker's
    /// job lease: it heartbeats every third of it).
    pub lease: Duration,
}

/// A registration this process holds: present it to heartbeat and stop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registration {
    /// The worker id the row was registered under.
    pub id: String,
    /// Random per start: a stop or heartbeat of this start never touches the row of a
    /// later process that reused the id.
    pub session: Uuid,
}

/// A row's state, read against the database clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkerState {
    /// Not stopped, heartbeat younger than its lease.
    Running,
    /// Not stopped, but no heartbeat for longer than its lease: the process died (or
    /// cannot reach the database). Its id may be used again.
    Lost,
    /// It shut down and said so.
    Stopped,
}

impl WorkerState {
    /// Every state, in the order the list shows them.
    pub const ALL: [WorkerState; 3] = [
        WorkerState::Running,
        WorkerState::Lost,
        WorkerState::Stopped,
    ];

    /// `"running"`, `"lost"`, `"stopped"`: how the state is shown.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkerState::Running => "running",
            WorkerState::Lost => "lost",
            WorkerState::Stopped => "stopped",
        }
    }
}

/// One row of the registry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerRecord {
    /// Its worker id (`locked_by` of the jobs it claims).
    pub id: String,
    /// Whether it runs jobs or schedules.
    pub kind: WorkerKind,
    /// Running, lost or stopped, read against the database clock when listed.
    pub state: WorkerState,
    /// The host name of its machine.
    pub hostname: String,
    /// Its process id on that machine.
    pub pid: i32,
    /// The `sluice` version it runs.
    pub version: String,
    /// The task contracts it runs (`"0.1"`, `"0.2"`); empty for a scheduler.
    pub contracts: Vec<String>,
    /// `None` for a scheduler.
    pub concurrency: Option<i32>,
    /// The lease in milliseconds: a row without a heartbeat for longer is lost.
    pub lease_ms: i64,
    /// When it registered.
    pub started_at: DateTime<Utc>,
    /// Its last heartbeat (a worker's job heartbeat renews it too).
    pub last_heartbeat: DateTime<Utc>,
    /// When it said it stopped; `None` while running or lost.
    pub stopped_at: Option<DateTime<Utc>>,
}

/// Registers, unless the id is held by a live process (see the file).
const REGISTER: &str = include_str!("../sql/workers/register.sql");
const HEARTBEAT: &str = include_str!("../sql/workers/heartbeat.sql");
const STOP: &str = include_str!("../sql/workers/stop.sql");
const LIST: &str = include_str!("../sql/workers/list.sql");
const PRUNE: &str = include_str!("../sql/workers/prune.sql");

#[derive(sqlx::FromRow)]
struct RegisterRow {
    registered: bool,
    kind: Option<String>,
    hostname: Option<String>,
    pid: Option<i32>,
    last_heartbeat: Option<DateTime<Utc>>,
    seconds_ago: Option<f64>,
    lease_us: Option<i64>,
}

#[derive(sqlx::FromRow)]
struct ListRow {
    id: String,
    kind: String,
    hostname: String,
    pid: i32,
    version: String,
    contracts: Vec<String>,
    concurrency: Option<i32>,
    lease_us: i64,
    started_at: DateTime<Utc>,
    last_heartbeat: DateTime<Utc>,
    stopped_at: Option<DateTime<Utc>>,
    state: String,
}

impl Store {
    /// Registers `worker` as running, or refuses with [`StoreError::WorkerIdInUse`] when
    /// its id belongs to a live process. One statement: two processes starting with the
    /// same id at once cannot both get it. A stopped or lost row of the id is replaced.
    #[tracing::instrument(name = "store.register_worker", level = "debug", skip_all, fields(id = %worker.id))]
    pub async fn register_worker(&self, worker: &NewWorker) -> Result<Registration, StoreError> {
        if worker.id.is_empty() {
            return Err(StoreError::InvalidInput {
                field: "worker id",
                message: "must not be empty".into(),
            });
        }
        let lease_us = micros("lease", worker.lease, true)?;
        let pid = i32::try_from(worker.pid).map_err(|_| StoreError::InvalidInput {
            field: "pid",
            message: format!("{} is out of range", worker.pid),
        })?;
        let concurrency = worker
            .concurrency
            .map(|c| i32::try_from(c.max(1)).unwrap_or(i32::MAX));
        let session = Uuid::new_v4();
        let row: RegisterRow = sqlx::query_as(REGISTER)
            .bind(&worker.id)
            .bind(worker.kind.as_str())
            .bind(session)
            .bind(&worker.hostname)
            .bind(pid)
            .bind(&worker.version)
            .bind(&worker.contracts)
            .bind(concurrency)
            .bind(lease_us)
            .fetch_one(&self.pool)
            .await?;
        if row.registered {
            return Ok(Registration {
                id: worker.id.clone(),
                session,
            });
        }
        let live = match (row.kind, row.hostname, row.pid, row.last_heartbeat) {
            (Some(kind), Some(hostname), Some(pid), Some(last_heartbeat)) => Some(LiveWorker {
                kind,
                hostname,
                pid,
                last_heartbeat,
                seconds_ago: row.seconds_ago.unwrap_or(0.0).max(0.0),
                lease: Duration::from_micros(row.lease_us.unwrap_or(0).max(0) as u64),
            }),
            _ => None,
        };
        Err(StoreError::WorkerIdInUse {
            id: worker.id.clone(),
            live,
        })
    }

    /// Says a registered process without jobs to renew is alive (a worker's row is
    /// renewed by [`Store::heartbeat`]). `false`: the row is no longer this
    /// registration's (it was stopped, or another process took the id after this one
    /// was lost).
    pub async fn worker_heartbeat(&self, registration: &Registration) -> Result<bool, StoreError> {
        let row: Option<String> = sqlx::query_scalar(HEARTBEAT)
            .bind(&registration.id)
            .bind(registration.session)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.is_some())
    }

    /// Marks this registration stopped: its id is free at once. `false`: it was no
    /// longer this registration's row (already stopped, or taken after it was lost).
    pub async fn stop_worker(&self, registration: &Registration) -> Result<bool, StoreError> {
        let row: Option<String> = sqlx::query_scalar(STOP)
            .bind(&registration.id)
            .bind(registration.session)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.is_some())
    }

    /// Every row of the registry: running first, then lost, then stopped; newest first.
    pub async fn list_workers(&self) -> Result<Vec<WorkerRecord>, StoreError> {
        let rows: Vec<ListRow> = sqlx::query_as(LIST).fetch_all(&self.pool).await?;
        Ok(rows.into_iter().map(WorkerRecord::from).collect())
    }

    /// Deletes the rows of processes stopped or lost more than `older_than` ago;
    /// returns how many.
    pub async fn prune_workers(&self, older_than: Duration) -> Result<u64, StoreError> {
        let done = sqlx::query(PRUNE)
            .bind(micros("older_than", older_than, false)?)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }
}

impl From<ListRow> for WorkerRecord {
    fn from(r: ListRow) -> Self {
        WorkerRecord {
            id: r.id,
            kind: match r.kind.as_str() {
                "scheduler" => WorkerKind::Scheduler,
                _ => WorkerKind::Worker,
            },
            state: match r.state.as_str() {
                "stopped" => WorkerState::Stopped,
                "lost" => WorkerState::Lost,
                _ => WorkerState::Running,
            },
            hostname: r.hostname,
            pid: r.pid,
            version: r.version,
            contracts: r.contracts,
            concurrency: r.concurrency,
            lease_ms: r.lease_us / 1000,
            started_at: r.started_at,
            last_heartbeat: r.last_heartbeat,
            stopped_at: r.stopped_at,
        }
    }
}
