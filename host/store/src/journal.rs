//! The journal of a durable job (`sluice.journal`, `sluice.journal_heads`, migration
//! 0023; `docs/durable.md`): the fenced append of an attempt's new entries
//! ([`Store::append_journal`]) and of a failed attempt's give-back
//! ([`Store::truncate_journal`]), what the next attempt replays ([`Store::load_journal`])
//! and how a tenant reads it ([`Store::journal`]).
//!
//! Owns: those four statements and the rows' shapes. Must not: append without the
//! attempt's lease (the statement matches id, `running` and the token), read without the
//! tenant scope callers pass, or interpret a result's bytes (the sandbox encodes them).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::{Store, StoreError, text};

const APPEND: &str = include_str!("../sql/journal/append.sql");
const LOAD: &str = include_str!("../sql/journal/load.sql");
const LIST: &str = include_str!("../sql/journal/list.sql");
const TRUNCATE: &str = include_str!("../sql/journal/truncate.sql");

/// One host call as journaled: its place, what was asked and what the guest got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalEntry {
    /// From 0, in the order the guest made the calls.
    pub seq: i32,
    /// `wall-clock`, `monotonic-clock`, `random`, `http`, `secret`, `enqueue`.
    pub kind: String,
    /// The request's fingerprint (compared on replay).
    pub request: String,
    /// For people: `200, 12 bytes`, `found`, ...
    pub summary: String,
    /// The result as the sandbox encoded it.
    pub result: Vec<u8>,
}

/// What the next attempt of a durable job replays.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadedJournal {
    /// The component the first attempt ran (`None`: nothing journaled yet).
    pub component_id: Option<i64>,
    /// The journal's size as counted against its cap.
    pub bytes: i64,
    /// The entries, in order (seq 0, 1, ...).
    pub entries: Vec<JournalEntry>,
}

/// Why an append wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    /// The job is no longer `running` under this lease: the attempt must stop.
    #[error("the lease of job {0} is lost")]
    LeaseLost(i64),
    /// The journal would grow to `bytes`, past `cap`.
    #[error("the journal would be {bytes} bytes, over its cap of {cap} bytes")]
    OverCap {
        /// The size the append would reach.
        bytes: i64,
        /// The job's cap.
        cap: i64,
    },
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One entry of a job's journal for people.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct JournalRecord {
    /// Its place in the journal, from 0.
    pub seq: i32,
    /// The host call: `http`, `secret`, `enqueue`, `wall-clock`, `monotonic-clock`, `random`.
    pub kind: String,
    /// What was asked (a method and URL, a secret's name), for matching a replay.
    pub request: String,
    /// The result in a few words (a status, a size), for people.
    pub summary: String,
    /// The recorded result as replayed.
    pub result: Vec<u8>,
    /// The attempt that recorded it (live).
    pub attempt: i32,
    /// When it was recorded.
    pub recorded_at: DateTime<Utc>,
    /// A later attempt ran, which was answered from this entry instead of calling.
    pub replayed: bool,
}

#[derive(sqlx::FromRow)]
struct Loaded {
    component_id: i64,
    journal_bytes: i64,
    seq: Option<i32>,
    kind: Option<String>,
    request: Option<String>,
    summary: Option<String>,
    result: Option<Vec<u8>>,
}

impl Store {
    /// Appends `entries` to job `job_id`'s journal under `lease`, pinning `component_id`
    /// if it is the first append, in one statement; refused whole when the job is no
    /// longer `running` under the lease ([`AppendError::LeaseLost`]) or when the journal
    /// would grow past `cap` bytes ([`AppendError::OverCap`]).
    pub async fn append_journal(
        &self,
        job_id: i64,
        lease: Uuid,
        component_id: i64,
        cap: i64,
        entries: &[JournalEntry],
    ) -> Result<(), AppendError> {
        let column =
            |f: fn(&JournalEntry) -> &str| -> Vec<&str> { entries.iter().map(f).collect() };
        let seqs: Vec<i32> = entries.iter().map(|e| e.seq).collect();
        let results: Vec<&[u8]> = entries.iter().map(|e| e.result.as_slice()).collect();
        let (fenced, appended, bytes): (bool, bool, i64) = sqlx::query_as(APPEND)
            .bind(job_id)
            .bind(lease)
            .bind(component_id)
            .bind(cap)
            .bind(seqs)
            .bind(column(|e| &e.kind))
            .bind(column(|e| &e.request))
            .bind(column(|e| &e.summary))
            .bind(results)
            .fetch_one(&self.pool)
            .await
            .map_err(StoreError::from)?;
        match (fenced, appended) {
            (false, _) => Err(AppendError::LeaseLost(job_id)),
            (true, false) => Err(AppendError::OverCap { bytes, cap }),
            (true, true) => Ok(()),
        }
    }

    /// Drops job `job_id`'s journal entries from `from_seq` on under `lease` (a failed
    /// attempt gives back its last live HTTP call); refused when the lease is lost.
    pub async fn truncate_journal(
        &self,
        job_id: i64,
        lease: Uuid,
        from_seq: i32,
    ) -> Result<(), AppendError> {
        let fenced: bool = sqlx::query_scalar(TRUNCATE)
            .bind(job_id)
            .bind(lease)
            .bind(from_seq)
            .fetch_one(&self.pool)
            .await
            .map_err(StoreError::from)?;
        if fenced {
            Ok(())
        } else {
            Err(AppendError::LeaseLost(job_id))
        }
    }

    /// What the next attempt of job `job_id` replays (the worker's read, unscoped).
    pub async fn load_journal(&self, job_id: i64) -> Result<LoadedJournal, StoreError> {
        let rows: Vec<Loaded> = sqlx::query_as(LOAD)
            .bind(job_id)
            .fetch_all(&self.pool)
            .await?;
        let mut loaded = LoadedJournal::default();
        for row in rows {
            loaded.component_id = Some(row.component_id);
            loaded.bytes = row.journal_bytes;
            if let (Some(seq), Some(kind), Some(request), Some(summary), Some(result)) =
                (row.seq, row.kind, row.request, row.summary, row.result)
            {
                loaded.entries.push(JournalEntry {
                    seq,
                    kind,
                    request,
                    summary,
                    result,
                });
            }
        }
        Ok(loaded)
    }

    /// Job `id`'s journal, in order. Empty when the job journaled nothing, does not exist
    /// or belongs to another tenant (`tenant` given): callers tell those apart with
    /// [`Store::get`] (scoped the same way).
    pub async fn journal(
        &self,
        tenant: Option<&str>,
        id: i64,
    ) -> Result<Vec<JournalRecord>, StoreError> {
        if !tenant.is_none_or(text::findable) {
            return Ok(Vec::new());
        }
        Ok(sqlx::query_as(LIST)
            .bind(id)
            .bind(tenant)
            .fetch_all(&self.pool)
            .await?)
    }
}
