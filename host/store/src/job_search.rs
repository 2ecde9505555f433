//! The dashboard's job list and bulk actions: search one tenant's jobs by any mix of
//! filters, count them, and retry, cancel or delete many at once.
//!
//! Owns: the statements under `sql/job_search/`. Each bulk action is one guarded
//! statement over `id = ANY(ids) AND tenant = t` with the same state rules as the
//! single-job action (`admin.rs`): retry dead|cancelled, cancel pending (running: ask its
//! worker), delete anything but running. [`Store::bulk_matching`] applies one to every
//! match in keyset batches of [`BULK_BATCH`], one short transaction each.
//!
//! Must not: touch a running job's lease (cancel only asks; delete skips it), act on
//! another tenant's job, page with OFFSET, or hold one transaction over a whole search.
//!
//! Cost: the payload filter reads every candidate's payload as JSON
//! (`sluice.payload_jsonb`, migration 0019): a scan over what the tenant's other filters
//! leave, fine for a dashboard, not for a hot path. Without a state the list walks the
//! primary key backwards (see the note on listing in migrations/0002_jobs.sql).

use chrono::{DateTime, Utc};

use crate::admin::JobSummary;
use crate::error::is_unique_violation;
use crate::listen::{CANCEL_CHANNEL, JOBS_CHANNEL};
use crate::types::JobState;
use crate::{Store, StoreError, text};

/// At most this many ids in one [`Store::bulk_jobs`] call.
pub const MAX_BULK_IDS: usize = 1000;

/// [`Store::bulk_matching`] selects and acts on this many jobs per transaction.
pub const BULK_BATCH: u32 = 500;

/// At most this many jobs in one page of [`Store::search_jobs`].
pub const MAX_SEARCH_LIMIT: u32 = 500;

/// Which of a tenant's jobs to list. Every filter given must hold (AND); `None` and an
/// empty `states` mean "any".
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobSearch {
    /// The tenant whose jobs are searched (always one).
    pub tenant: String,
    /// Any of these states (empty: any state).
    pub states: Vec<JobState>,
    /// Only jobs of this type.
    pub job_type: Option<String>,
    /// Only jobs of exactly this priority.
    pub priority: Option<i32>,
    /// Only the job with this id.
    pub id: Option<i64>,
    /// Only jobs enqueued with exactly this idempotency key.
    pub idempotency_key: Option<String>,
    /// Only the follow-up jobs of this job.
    pub parent: Option<i64>,
    /// Created at or after this instant.
    pub created_from: Option<DateTime<Utc>>,
    /// Created before this instant.
    pub created_to: Option<DateTime<Utc>>,
    /// The payload, read as JSON, contains this value (`@>`); payloads that are not JSON
    /// never match. A value holding `\u0000` (which `jsonb` cannot hold) is refused with
    /// `InvalidInput` by every call that takes the search.
    pub payload_contains: Option<serde_json::Value>,
}

/// A bulk action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BulkAction {
    /// dead|cancelled → pending, attempts reset, due now.
    Retry,
    /// pending → cancelled; running → cancel requested (its worker is told).
    Cancel,
    /// Deleted with its history, in any state but running.
    Delete,
}

impl BulkAction {
    /// `retry`, `cancel`, `delete`.
    pub fn as_str(self) -> &'static str {
        match self {
            BulkAction::Retry => "retry",
            BulkAction::Cancel => "cancel",
            BulkAction::Delete => "delete",
        }
    }
}

/// What a bulk action did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BulkOutcome {
    /// Jobs of the tenant the action was applied to (by id: those that exist; by search:
    /// those that matched when each batch was selected).
    pub matched: i64,
    /// Of those, the ones that changed (the rest were in a state the action does not
    /// apply to, or, for a retry, their idempotency key is taken by another job now).
    pub changed: i64,
}

const SEARCH_JOBS: &str = include_str!("../sql/job_search/search.sql");
const COUNT_JOBS: &str = include_str!("../sql/job_search/count.sql");
/// Skips rows whose unfinished-scoped key is taken; a unique violation means an enqueue
/// took one mid-statement (run it again).
const BULK_RETRY: &str = include_str!("../sql/job_search/bulk_retry.sql");
const BULK_CANCEL: &str = include_str!("../sql/job_search/bulk_cancel.sql");
/// Never a running job.
const BULK_DELETE: &str = include_str!("../sql/job_search/bulk_delete.sql");

/// The search's states as their SQL spelling.
fn state_names(search: &JobSearch) -> Vec<&'static str> {
    search.states.iter().map(|s| s.as_str()).collect()
}

/// Refuses a payload filter `jsonb` cannot hold (a `\u0000`): it could match nothing,
/// and saying so beats an empty list that looks like an answer.
fn check(search: &JobSearch) -> Result<(), StoreError> {
    match &search.payload_contains {
        Some(value) => text::check_json("payload filter", value),
        None => Ok(()),
    }
}

/// False when no stored job can match (a text filter holds NUL).
fn findable(search: &JobSearch) -> bool {
    text::findable(&search.tenant)
        && search.job_type.as_deref().is_none_or(text::findable)
        && search.idempotency_key.as_deref().is_none_or(text::findable)
}

impl Store {
    /// One page of the tenant's jobs matching `search`, newest first. For the next page
    /// pass the last id as `after` (keyset, `id < after`). `limit` is clamped to
    /// `1..=500`.
    pub async fn search_jobs(
        &self,
        search: &JobSearch,
        after: Option<i64>,
        limit: u32,
    ) -> Result<Vec<JobSummary>, StoreError> {
        check(search)?;
        if !findable(search) {
            return Ok(Vec::new());
        }
        let limit = limit.clamp(1, MAX_SEARCH_LIMIT);
        Ok(sqlx::query_as(SEARCH_JOBS)
            .bind(&search.tenant)
            .bind(state_names(search))
            .bind(search.job_type.as_deref())
            .bind(search.priority)
            .bind(search.id)
            .bind(search.idempotency_key.as_deref())
            .bind(search.parent)
            .bind(search.created_from)
            .bind(search.created_to)
            .bind(search.payload_contains.as_ref())
            .bind(after)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?)
    }

    /// How many of the tenant's jobs match `search`.
    pub async fn count_jobs(&self, search: &JobSearch) -> Result<i64, StoreError> {
        check(search)?;
        if !findable(search) {
            return Ok(0);
        }
        Ok(sqlx::query_scalar(COUNT_JOBS)
            .bind(&search.tenant)
            .bind(state_names(search))
            .bind(search.job_type.as_deref())
            .bind(search.priority)
            .bind(search.id)
            .bind(search.idempotency_key.as_deref())
            .bind(search.parent)
            .bind(search.created_from)
            .bind(search.created_to)
            .bind(search.payload_contains.as_ref())
            .fetch_one(&self.pool)
            .await?)
    }

    /// Applies `action` to the tenant's jobs among `ids` (at most [`MAX_BULK_IDS`]) in
    /// one statement; ids of other tenants or of no job are left alone and not counted.
    /// Jobs in a state the action does not apply to are counted as matched, not changed.
    #[tracing::instrument(name = "store.bulk_jobs", level = "debug", skip(self, ids), fields(ids = ids.len()))]
    pub async fn bulk_jobs(
        &self,
        tenant: &str,
        action: BulkAction,
        ids: &[i64],
    ) -> Result<BulkOutcome, StoreError> {
        if ids.len() > MAX_BULK_IDS {
            return Err(StoreError::InvalidInput {
                field: "ids",
                message: format!(
                    "{} job ids, more than the {MAX_BULK_IDS} one bulk action takes: \
                     split them, or act on a search",
                    ids.len()
                ),
            });
        }
        if ids.is_empty() || !text::findable(tenant) {
            return Ok(BulkOutcome::default());
        }
        let (matched, changed) = match action {
            BulkAction::Retry => self.bulk_retry(tenant, ids).await?,
            BulkAction::Cancel => {
                let (matched, changed, _notified): (i64, i64, i64) = sqlx::query_as(BULK_CANCEL)
                    .bind(ids)
                    .bind(tenant)
                    .bind(CANCEL_CHANNEL)
                    .fetch_one(&self.pool)
                    .await?;
                (matched, changed)
            }
            BulkAction::Delete => {
                sqlx::query_as(BULK_DELETE)
                    .bind(ids)
                    .bind(tenant)
                    .fetch_one(&self.pool)
                    .await?
            }
        };
        Ok(BulkOutcome { matched, changed })
    }

    /// The retry statement, run again (up to three times) when a concurrent enqueue took
    /// an idempotency key between its check and its update.
    async fn bulk_retry(&self, tenant: &str, ids: &[i64]) -> Result<(i64, i64), StoreError> {
        let mut tries = 0;
        loop {
            tries += 1;
            let result: Result<(i64, i64, i64), sqlx::Error> = sqlx::query_as(BULK_RETRY)
                .bind(ids)
                .bind(tenant)
                .bind(JOBS_CHANNEL)
                .fetch_one(&self.pool)
                .await;
            match result {
                Ok((matched, changed, _notified)) => return Ok((matched, changed)),
                Err(e) if tries < 3 && is_unique_violation(&e, "jobs_idempotency_key_uidx") => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Applies `action` to every job of the tenant matching `search`: selects up to
    /// [`BULK_BATCH`] ids at a time (newest first, keyset, so each job is visited once
    /// even when the action leaves it matching) and runs [`Store::bulk_jobs`] on them,
    /// until none are left. Each batch is its own short statement: a million matches
    /// never hold one transaction. Jobs created after the first batch was selected with
    /// ids above it are not visited.
    pub async fn bulk_matching(
        &self,
        search: &JobSearch,
        action: BulkAction,
    ) -> Result<BulkOutcome, StoreError> {
        check(search)?;
        let mut total = BulkOutcome::default();
        let mut after = None;
        loop {
            let ids: Vec<i64> = self
                .search_jobs(search, after, BULK_BATCH)
                .await?
                .into_iter()
                .map(|j| j.id)
                .collect();
            let Some(&last) = ids.last() else {
                return Ok(total);
            };
            let outcome = self.bulk_jobs(&search.tenant, action, &ids).await?;
            total.matched += ids.len() as i64;
            total.changed += outcome.changed;
            if ids.len() < BULK_BATCH as usize {
                return Ok(total);
            }
            after = Some(last);
        }
    }
}
