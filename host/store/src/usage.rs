//! Usage metering (issue #40, docs/usage.md): what each tenant's runs used, per job type
//! and hour, added to in batches by workers ([`Store::record_usage`]) and read back summed
//! ([`Store::usage`]).
//!
//! Owns: the statements on `sluice.usage_hourly` (migration 0033), and the webhook event
//! `sluice.quota.reached` a batch that uses up a tenant's daily quota sends. Must not:
//! meter anything itself (the worker adds up what the sandbox reports) or enforce quotas
//! (the claim does, reading the same table through `sluice.quota_room`).

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::{Store, StoreError, micros, text};

const RECORD_USAGE: &str = include_str!("../sql/usage/record.sql");
const USAGE_REPORT: &str = include_str!("../sql/usage/report.sql");
const QUOTA_EVENTS: &str = include_str!("../sql/usage/quota_events.sql");
const PRUNE_USAGE: &str = include_str!("../sql/usage/prune.sql");

/// How long usage rows are kept after their hour ends (retention deletes older ones): a
/// year of monthly bills and a month to spare.
pub const USAGE_RETENTION: Duration = Duration::from_secs(400 * 24 * 3600);

/// What one tenant's runs of one job type used, summed: added to by a worker, written by
/// [`Store::record_usage`], and read back by [`Store::usage`] (one row per tenant and,
/// as asked, job type or hour).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UsageCounts {
    /// Runs that ended on a worker (completed, failed, cancelled, suspended).
    pub runs: i64,
    /// Fuel the runs burned.
    pub fuel: i64,
    /// Wall-clock time of the runs, in milliseconds.
    pub wall_ms: i64,
    /// The largest peak linear memory of one run, in bytes.
    pub peak_memory_bytes: i64,
    /// Outbound HTTP requests started.
    pub http_requests: i64,
    /// Request body bytes sent.
    pub http_bytes_out: i64,
    /// Response body bytes read.
    pub http_bytes_in: i64,
    /// Payload bytes handed to the runs.
    pub payload_bytes: i64,
    /// Output bytes of completed runs.
    pub output_bytes: i64,
    /// Log bytes kept.
    pub log_bytes: i64,
}

impl UsageCounts {
    /// Adds `other` (the peak memory is the larger of the two).
    pub fn add(&mut self, other: &UsageCounts) {
        self.runs += other.runs;
        self.fuel = self.fuel.saturating_add(other.fuel);
        self.wall_ms += other.wall_ms;
        self.peak_memory_bytes = self.peak_memory_bytes.max(other.peak_memory_bytes);
        self.http_requests += other.http_requests;
        self.http_bytes_out += other.http_bytes_out;
        self.http_bytes_in += other.http_bytes_in;
        self.payload_bytes += other.payload_bytes;
        self.output_bytes += other.output_bytes;
        self.log_bytes += other.log_bytes;
    }
}

/// Usage to add for one tenant and job type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageDelta {
    /// The tenant.
    pub tenant: String,
    /// The job type.
    pub job_type: String,
    /// What its runs used since the last batch.
    pub counts: UsageCounts,
}

/// How [`Store::usage`] groups beyond the tenant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UsageGrouping {
    /// One row per tenant.
    #[default]
    Tenant,
    /// One row per tenant and job type.
    Type,
    /// One row per tenant and hour (UTC).
    Hour,
}

/// One row of [`Store::usage`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageRow {
    /// The tenant.
    pub tenant: String,
    /// The job type, when grouped by type.
    pub job_type: Option<String>,
    /// The hour (UTC), when grouped by hour.
    pub hour: Option<DateTime<Utc>>,
    /// What was used.
    pub counts: UsageCounts,
}

#[derive(sqlx::FromRow)]
struct ReportRow {
    tenant: String,
    job_type: Option<String>,
    hour: Option<DateTime<Utc>>,
    runs: i64,
    fuel: i64,
    wall_ms: i64,
    peak_memory_bytes: i64,
    http_requests: i64,
    http_bytes_out: i64,
    http_bytes_in: i64,
    payload_bytes: i64,
    output_bytes: i64,
    log_bytes: i64,
}

impl From<ReportRow> for UsageRow {
    fn from(r: ReportRow) -> Self {
        UsageRow {
            tenant: r.tenant,
            job_type: r.job_type,
            hour: r.hour,
            counts: UsageCounts {
                runs: r.runs,
                fuel: r.fuel,
                wall_ms: r.wall_ms,
                peak_memory_bytes: r.peak_memory_bytes,
                http_requests: r.http_requests,
                http_bytes_out: r.http_bytes_out,
                http_bytes_in: r.http_bytes_in,
                payload_bytes: r.payload_bytes,
                output_bytes: r.output_bytes,
                log_bytes: r.log_bytes,
            },
        }
    }
}

impl Store {
    /// Adds `deltas` to the current hour's usage, in one statement (nothing for none);
    /// then, in a second one that sees it, sends `sluice.quota.reached` for each daily
    /// quota of these tenants used up today (once per tenant, quota and day).
    pub async fn record_usage(&self, deltas: &[UsageDelta]) -> Result<(), StoreError> {
        if deltas.is_empty() {
            return Ok(());
        }
        let column = |f: fn(&UsageCounts) -> i64| -> Vec<i64> {
            deltas.iter().map(|d| f(&d.counts)).collect()
        };
        let names: Vec<&str> = deltas.iter().map(|d| d.tenant.as_str()).collect();
        let types: Vec<&str> = deltas.iter().map(|d| d.job_type.as_str()).collect();
        sqlx::query(RECORD_USAGE)
            .bind(names)
            .bind(types)
            .bind(column(|c| c.runs))
            .bind(column(|c| c.fuel))
            .bind(column(|c| c.wall_ms))
            .bind(column(|c| c.peak_memory_bytes))
            .bind(column(|c| c.http_requests))
            .bind(column(|c| c.http_bytes_out))
            .bind(column(|c| c.http_bytes_in))
            .bind(column(|c| c.payload_bytes))
            .bind(column(|c| c.output_bytes))
            .bind(column(|c| c.log_bytes))
            .execute(&self.pool)
            .await?;
        let mut tenants: Vec<&str> = deltas.iter().map(|d| d.tenant.as_str()).collect();
        tenants.sort_unstable();
        tenants.dedup();
        sqlx::query(QUOTA_EVENTS)
            .bind(tenants)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Usage from the hour `since` falls in until `until` (exclusive; `None`: now), of
    /// `tenant` (`None`: every tenant), summed per tenant and as `by` asks; ordered by
    /// tenant, then hour or type.
    pub async fn usage(
        &self,
        tenant: Option<&str>,
        since: DateTime<Utc>,
        until: Option<DateTime<Utc>>,
        by: UsageGrouping,
    ) -> Result<Vec<UsageRow>, StoreError> {
        if tenant.is_some_and(|t| !text::findable(t)) {
            return Ok(Vec::new());
        }
        let by = match by {
            UsageGrouping::Tenant => "",
            UsageGrouping::Type => "type",
            UsageGrouping::Hour => "hour",
        };
        let rows: Vec<ReportRow> = sqlx::query_as(USAGE_REPORT)
            .bind(tenant)
            .bind(since)
            .bind(until)
            .bind(by)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.into_iter().map(UsageRow::from).collect())
    }

    /// Deletes usage rows of hours that ended more than `older_than` ago, `batch` rows
    /// per statement, until a statement deletes fewer; returns how many.
    pub async fn prune_usage(&self, older_than: Duration, batch: u32) -> Result<u64, StoreError> {
        let older_than = micros("older_than", older_than, false)?;
        let mut deleted = 0;
        loop {
            let done = sqlx::query(PRUNE_USAGE)
                .bind(older_than)
                .bind(i64::from(batch))
                .execute(&self.pool)
                .await?
                .rows_affected();
            deleted += done;
            if done < u64::from(batch) {
                return Ok(deleted);
            }
        }
    }
}
