//! How metered usage looks in JSON ([`UsageView`]: `GET /v1/usage`, `sluice usage
//! --json`): what a tenant's runs used per tenant and, as asked, per job type or hour
//! (docs/usage.md), and the window it covers ([`UsageWindow`], parsed the same way on
//! both surfaces).
//!
//! Owns: these shapes, their conversions from `sluice_store::UsageRow`, and the words of
//! the window (`since`, `until`, `by`). Must not: read or write anything.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use sluice_shared::units::parse_duration;
use sluice_store::{UsageGrouping, UsageRow};
use utoipa::ToSchema;

/// The furthest back a report reaches, in days: an earlier `since` starts there.
pub const MAX_USAGE_DAYS: i64 = 366;

/// What a usage report covers: from `since` (the hour it falls in) until `until`
/// (exclusive; `None`: now), grouped per tenant and `by`.
#[derive(Clone, Debug, PartialEq)]
pub struct UsageWindow {
    /// The start (rounded down to its hour by the store).
    pub since: DateTime<Utc>,
    /// The end, exclusive (`None`: now).
    pub until: Option<DateTime<Utc>>,
    /// The grouping beyond the tenant.
    pub by: UsageGrouping,
}

/// A point in time as given to `since` / `until`: an RFC 3339 time
/// (`2026-12-01T00:00:00Z`) or a duration ago (`24h`, `7d`, `90m`).
pub fn parse_time(name: &str, text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Ok(at.with_timezone(&Utc));
    }
    let ago = parse_duration(text).map_err(|_| {
        format!("`{name}` {text:?} is neither an RFC 3339 time nor a duration ago like 24h or 7d")
    })?;
    Duration::from_std(ago)
        .ok()
        .and_then(|ago| now.checked_sub_signed(ago))
        .ok_or_else(|| format!("`{name}` {text:?} reaches too far back"))
}

/// The grouping named by `by`: `tenant` (or nothing), `type` or `hour`.
pub fn parse_grouping(text: Option<&str>) -> Result<UsageGrouping, String> {
    match text.unwrap_or("tenant") {
        "tenant" => Ok(UsageGrouping::Tenant),
        "type" => Ok(UsageGrouping::Type),
        "hour" => Ok(UsageGrouping::Hour),
        other => Err(format!("`by` {other:?} is not one of tenant, type, hour")),
    }
}

impl UsageWindow {
    /// The window from the surfaces' words (`since` defaults to 24 hours ago). Only a
    /// malformed word is an error: a `since` further back than [`MAX_USAGE_DAYS`] starts
    /// there (the answer's `since` says so), and an `until` not after `since` is an empty
    /// window.
    pub fn parse(
        since: Option<&str>,
        until: Option<&str>,
        by: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<UsageWindow, String> {
        let since = since.map(|s| parse_time("since", s, now)).transpose()?;
        let until = until.map(|u| parse_time("until", u, now)).transpose()?;
        Ok(UsageWindow::new(since, until, parse_grouping(by)?, now))
    }

    /// The window of two instants (`since` defaults to 24 hours ago), bounded as
    /// [`Self::parse`] says.
    pub fn new(
        since: Option<DateTime<Utc>>,
        until: Option<DateTime<Utc>>,
        by: UsageGrouping,
        now: DateTime<Utc>,
    ) -> UsageWindow {
        let since = since
            .unwrap_or(now - Duration::hours(24))
            .max(now - Duration::days(MAX_USAGE_DAYS));
        UsageWindow { since, until, by }
    }
}

/// What runs used in one group.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UsageRowView {
    /// The tenant.
    pub tenant: String,
    /// The job type (grouped by type; absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_type: Option<String>,
    /// The hour, UTC (grouped by hour; absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hour: Option<DateTime<Utc>>,
    /// Runs that ended on a worker (completed, failed, cancelled or suspended).
    #[schema(minimum = 0)]
    pub runs: i64,
    /// Fuel burned.
    #[schema(minimum = 0)]
    pub fuel: i64,
    /// Wall-clock time of the runs, in milliseconds.
    #[schema(minimum = 0)]
    pub wall_ms: i64,
    /// The largest peak linear memory of one run, in bytes.
    #[schema(minimum = 0)]
    pub peak_memory_bytes: i64,
    /// Outbound HTTP requests started.
    #[schema(minimum = 0)]
    pub http_requests: i64,
    /// Request body bytes sent.
    #[schema(minimum = 0)]
    pub http_bytes_out: i64,
    /// Response body bytes read.
    #[schema(minimum = 0)]
    pub http_bytes_in: i64,
    /// Payload bytes handed to the runs.
    #[schema(minimum = 0)]
    pub payload_bytes: i64,
    /// Output bytes of completed runs.
    #[schema(minimum = 0)]
    pub output_bytes: i64,
    /// Log bytes kept.
    #[schema(minimum = 0)]
    pub log_bytes: i64,
}

impl From<UsageRow> for UsageRowView {
    fn from(r: UsageRow) -> Self {
        let c = r.counts;
        UsageRowView {
            tenant: r.tenant,
            job_type: r.job_type,
            hour: r.hour,
            runs: c.runs,
            fuel: c.fuel,
            wall_ms: c.wall_ms,
            peak_memory_bytes: c.peak_memory_bytes,
            http_requests: c.http_requests,
            http_bytes_out: c.http_bytes_out,
            http_bytes_in: c.http_bytes_in,
            payload_bytes: c.payload_bytes,
            output_bytes: c.output_bytes,
            log_bytes: c.log_bytes,
        }
    }
}

/// A usage report: its window and its rows (by tenant, then hour or type).
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UsageView {
    /// The start of the window (its hour counts whole).
    pub since: DateTime<Utc>,
    /// The end of the window, exclusive (null: now).
    #[schema(required = true)]
    pub until: Option<DateTime<Utc>>,
    /// The grouping beyond the tenant: `tenant`, `type` or `hour`.
    #[schema(pattern = "^(tenant|type|hour)$")]
    pub by: String,
    /// One row per group.
    pub rows: Vec<UsageRowView>,
}

impl UsageView {
    /// The report of `window` with `rows`.
    pub fn new(window: &UsageWindow, rows: Vec<UsageRow>) -> UsageView {
        UsageView {
            since: window.since,
            until: window.until,
            by: match window.by {
                UsageGrouping::Tenant => "tenant",
                UsageGrouping::Type => "type",
                UsageGrouping::Hour => "hour",
            }
            .to_owned(),
            rows: rows.into_iter().map(UsageRowView::from).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_parse_times_durations_and_groupings_and_name_what_is_wrong() {
        let now = DateTime::parse_from_rfc3339("2026-12-06T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let w = UsageWindow::parse(None, None, None, now).unwrap();
        assert_eq!(
            (w.since, w.until, w.by),
            (now - Duration::hours(24), None, UsageGrouping::Tenant)
        );
        let w = UsageWindow::parse(Some("7d"), Some("2026-12-06T00:00:00Z"), Some("type"), now)
            .unwrap();
        assert_eq!(w.since, now - Duration::days(7));
        assert_eq!(w.by, UsageGrouping::Type);
        let far = UsageWindow::parse(Some("2020-01-01T00:00:00Z"), None, None, now).unwrap();
        assert_eq!(
            far.since,
            now - Duration::days(MAX_USAGE_DAYS),
            "starts 366 days back"
        );
        for (since, until, by, says) in [
            (Some("yesterday"), None, None, "`since`"),
            (None, Some("soon"), None, "`until`"),
            (None, None, Some("day"), "`by`"),
        ] {
            let error = UsageWindow::parse(since, until, by, now).unwrap_err();
            assert!(error.contains(says), "{error}");
        }
    }
}
