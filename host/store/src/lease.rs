//! The worker's side of the queue, first half: claiming jobs and keeping their leases.
//!
//! Owns: the claim statement (which also starts each attempt on its job row) and the
//! heartbeat. The ways an attempt ends are in `finish.rs`.
//! Must not: hand the same job to two claimers (SKIP LOCKED + a state recheck), or
//! extend a lease without matching `id`, `state = 'running'`, the token and the worker.

use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::trace_headers::TraceHeaders;
use crate::types::Lease;
use crate::{Store, StoreError, micros};

/// What a worker asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimRequest {
    /// Recorded as `locked_by` and in the attempt history (e.g. `host-3/slot-7`).
    pub worker: String,
    /// At most this many jobs (1..=10 000).
    pub limit: u32,
    /// The lease: the job is reaped if not heartbeaten or finished within this.
    pub lease: Duration,
    /// Only these tenants (`None`: all).
    pub tenants: Option<Vec<String>>,
    /// Only these job types (`None`: all).
    pub job_types: Option<Vec<String>>,
    /// The newest task contract this host runs, as N of `sluice:task@0.N.0`: jobs whose
    /// type's component targets a newer one stay `pending` for a newer host (rolling
    /// deploys, docs/fleet.md).
    pub max_contract: u8,
    /// The key ids of the secrets keys this host holds (`sluice-secrets` key ids): jobs
    /// whose type is granted secrets stay `pending` when this is empty, or when one of
    /// the granted secrets of the type's tenant is sealed under a key id not in it.
    pub secret_keys: Vec<String>,
    /// Leave these tenants' jobs pending (`None`: none): a worker's spare slot is only
    /// for a tenant with nothing executing on that worker (docs/fairness.md).
    pub skip_tenants: Option<Vec<String>>,
}

/// A job handed to a worker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimedJob {
    /// The job's id (`sluice.jobs.id`), the same on every attempt.
    pub id: i64,
    /// The tenant that owns it.
    pub tenant: String,
    /// Its job type's name; the worker resolves the component and limits from it.
    pub job_type: String,
    /// The payload bytes as enqueued, handed to the guest.
    pub payload: Vec<u8>,
    /// Its priority (higher was claimed first).
    pub priority: i32,
    /// This attempt's number, from 1.
    pub attempt: i32,
    /// Its attempt budget: a failure of attempt `max_attempts` makes it dead.
    pub max_attempts: i32,
    /// Present it to heartbeat/complete/fail/release/mark_cancelled.
    pub lease: Lease,
    /// Database time at which the lease expires unless extended.
    pub locked_until: DateTime<Utc>,
    /// The trace context the job was enqueued with (migration 0034; `None` on a
    /// database or enqueue without one).
    pub trace: Option<TraceHeaders>,
    /// When the job was due (its `run_at` as claimed): the attempt waited from then.
    pub due_at: DateTime<Utc>,
}

/// Result of a heartbeat.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HeartbeatReport {
    /// Jobs whose lease is gone (reaped, cancelled, finished): stop working on them and
    /// drop their results.
    pub lost: Vec<i64>,
    /// Jobs an operator asked to cancel: interrupt them, then call `mark_cancelled`.
    pub cancel_requested: Vec<i64>,
}

/// The claim: `sluice.claim(...)` (migrations/0007_fair_claims.sql, last replaced in
/// 0009, 0012 and 0013; its current text is in `schema.sql`) locks the capped tenants that have ready
/// work, then claims in one statement, interleaving tenants by how many jobs each
/// already runs (docs/fairness.md). Rows are locked with SKIP LOCKED, so concurrent
/// claimers never wait on each other's jobs and never get the same row; each attempt is
/// written onto its job row by the same statement (migration 9).
const CLAIM: &str = include_str!("../sql/claim/claim.sql");

/// By primary key, each row's token at its id's position: see `sql/finish/complete_many.sql`.
const HEARTBEAT: &str = include_str!("../sql/claim/heartbeat.sql");

#[derive(sqlx::FromRow)]
struct ClaimRow {
    id: i64,
    tenant: String,
    job_type: String,
    payload: Vec<u8>,
    priority: i32,
    attempt: i32,
    max_attempts: i32,
    lease_token: Uuid,
    locked_until: DateTime<Utc>,
    traceparent: Option<String>,
    tracestate: Option<String>,
    due_at: DateTime<Utc>,
}

impl Store {
    /// Claims up to `limit` due jobs in one statement (see [`ClaimRequest`]).
    #[tracing::instrument(name = "store.claim", level = "debug", skip_all, fields(worker = %req.worker, limit = req.limit))]
    pub async fn claim(&self, req: &ClaimRequest) -> Result<Vec<ClaimedJob>, StoreError> {
        if req.worker.is_empty() {
            return Err(StoreError::InvalidInput {
                field: "worker",
                message: "name the worker (it is recorded as locked_by)".into(),
            });
        }
        if req.limit > 10_000 {
            return Err(StoreError::InvalidInput {
                field: "limit",
                message: format!("claim at most 10000 jobs at once, asked for {}", req.limit),
            });
        }
        let lease_us = micros("lease", req.lease, true)?;
        if req.limit == 0 {
            return Ok(Vec::new());
        }
        let limit = i32::try_from(req.limit).expect("checked above");
        let rows = sqlx::query_as::<_, ClaimRow>(CLAIM)
            .bind(&req.worker)
            .bind(limit)
            .bind(lease_us)
            .bind(&req.tenants)
            .bind(&req.job_types)
            .bind(i16::from(req.max_contract))
            .bind(&req.secret_keys)
            .bind(&req.skip_tenants)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows
            .into_iter()
            .map(|r| ClaimedJob {
                id: r.id,
                tenant: r.tenant,
                job_type: r.job_type,
                payload: r.payload,
                priority: r.priority,
                attempt: r.attempt,
                max_attempts: r.max_attempts,
                lease: Lease {
                    job_id: r.id,
                    token: r.lease_token,
                },
                locked_until: r.locked_until,
                trace: r.traceparent.map(|traceparent| TraceHeaders {
                    traceparent,
                    tracestate: r.tracestate,
                }),
                due_at: r.due_at,
            })
            .collect())
    }

    /// Extends every lease in `leases` held by `worker` to now() + `lease`, in one
    /// statement, and reports which were lost and which jobs should be cancelled. The same
    /// statement renews `worker`'s row in the registry (`workers.rs`), so an idle worker
    /// calls it with no leases.
    #[tracing::instrument(name = "store.heartbeat", level = "debug", skip_all, fields(worker, leases = leases.len()))]
    pub async fn heartbeat(
        &self,
        worker: &str,
        leases: &[Lease],
        lease: Duration,
    ) -> Result<HeartbeatReport, StoreError> {
        let lease_us = micros("lease", lease, true)?;
        // Sent even without leases: the statement also renews the worker's row in the
        // registry (`sluice.workers`), so an idle worker does not look lost.
        let leases = crate::finish::in_id_order(leases, |l| l.job_id);
        let ids: Vec<i64> = leases.iter().map(|l| l.job_id).collect();
        let tokens: Vec<Uuid> = leases.iter().map(|l| l.token).collect();
        let rows: Vec<(i64, bool)> = sqlx::query_as(HEARTBEAT)
            .bind(worker)
            .bind(&ids)
            .bind(&tokens)
            .bind(lease_us)
            .fetch_all(&self.pool)
            .await?;
        let held: std::collections::HashSet<i64> = rows.iter().map(|(id, _)| *id).collect();
        let mut lost: Vec<i64> = ids.into_iter().filter(|id| !held.contains(id)).collect();
        lost.sort_unstable();
        lost.dedup();
        let mut cancel_requested: Vec<i64> = rows
            .into_iter()
            .filter(|(_, c)| *c)
            .map(|(id, _)| id)
            .collect();
        cancel_requested.sort_unstable();
        Ok(HeartbeatReport {
            lost,
            cancel_requested,
        })
    }
}
