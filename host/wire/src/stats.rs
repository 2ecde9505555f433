//! How queue statistics look in JSON ([`StatsView`]: `GET /v1/stats`, `sluice stats
//! --json`): jobs per state in total and per job type, the oldest ready job's age, and
//! lease expirations of the last hour, pauses and jobs held back by flow controls.
//!
//! Owns: these shapes and their conversions from `sluice_store::Stats`. Must not: read or
//! write anything.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sluice_store::{HeldCounts, StateCounts, Stats, TypeStats};
use utoipa::ToSchema;

/// Jobs per state; `ready` is the part of `pending` that is due now.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = StateCounts)]
pub struct StateCountsView {
    /// Jobs waiting for a claim, due now or later.
    #[schema(minimum = 0)]
    pub pending: i64,
    /// Pending jobs whose `run_at` has passed: claimable now.
    #[schema(minimum = 0)]
    pub ready: i64,
    /// Jobs held by a worker under a lease.
    #[schema(minimum = 0)]
    pub running: i64,
    /// Durable jobs suspended until a time, a signal or their follow-up jobs (no slot
    /// held).
    #[schema(minimum = 0)]
    pub waiting: i64,
    /// Completed jobs not yet removed by retention.
    #[schema(minimum = 0)]
    pub completed: i64,
    /// Jobs that used up their attempts or failed fatally, not yet removed by retention.
    #[schema(minimum = 0)]
    pub dead: i64,
    /// Cancelled jobs not yet removed by retention.
    #[schema(minimum = 0)]
    pub cancelled: i64,
}

impl From<StateCounts> for StateCountsView {
    fn from(c: StateCounts) -> Self {
        StateCountsView {
            pending: c.pending,
            ready: c.ready,
            running: c.running,
            waiting: c.waiting,
            completed: c.completed,
            dead: c.dead,
            cancelled: c.cancelled,
        }
    }
}

/// The figures of one job type.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = TypeStats)]
pub struct TypeStatsView {
    /// The tenant the figures are for.
    pub tenant: String,
    /// The job type the figures are for.
    pub job_type: String,
    /// False when jobs of this type exist but the type is no longer registered.
    pub registered: bool,
    /// Its jobs per state.
    pub counts: StateCountsView,
    /// Seconds since the oldest ready job became due (its `run_at`); null when none is
    /// ready.
    #[schema(required = true, minimum = 0)]
    pub oldest_ready_age_seconds: Option<f64>,
    /// Attempts of this type whose lease expired (their host died or stalled) in the last
    /// hour.
    #[schema(minimum = 0)]
    pub lease_expirations_last_hour: i64,
    /// The type, or its tenant, is paused (docs/flow-control.md).
    pub paused: bool,
    /// Due jobs held back now, by the flow control that holds them.
    pub held: HeldView,
}

/// Due jobs held back by pause, a used-up daily quota, the type's cap, a key's cap, or a
/// rate limit (each counted under the first that applies).
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = HeldCounts)]
pub struct HeldView {
    /// Held by a paused tenant or type.
    #[schema(minimum = 0)]
    pub paused: i64,
    /// Held by a daily quota their tenant used up (docs/usage.md).
    #[schema(minimum = 0)]
    pub quota: i64,
    /// Held by their type's cap on running jobs.
    #[schema(minimum = 0)]
    pub type_cap: i64,
    /// Held by their concurrency key's cap.
    #[schema(minimum = 0)]
    pub key_cap: i64,
    /// Held by a rate limit (the type's or the key's).
    #[schema(minimum = 0)]
    pub rate: i64,
}

impl From<HeldCounts> for HeldView {
    fn from(h: HeldCounts) -> Self {
        HeldView {
            paused: h.paused,
            quota: h.quota,
            type_cap: h.type_cap,
            key_cap: h.key_cap,
            rate: h.rate,
        }
    }
}

impl From<TypeStats> for TypeStatsView {
    fn from(t: TypeStats) -> Self {
        TypeStatsView {
            tenant: t.tenant,
            job_type: t.job_type,
            registered: t.registered,
            counts: t.counts.into(),
            oldest_ready_age_seconds: t.oldest_ready_age_seconds,
            lease_expirations_last_hour: t.lease_expirations_last_hour,
            paused: t.paused,
            held: t.held.into(),
        }
    }
}

/// Queue statistics of one tenant (or, on the CLI with `--all-tenants`, of every one).
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = Stats)]
pub struct StatsView {
    /// The tenant the figures are scoped to (over HTTP: the caller's; null: all tenants).
    #[schema(required = true)]
    pub tenant: Option<String>,
    /// Database time when the figures were taken.
    pub as_of: DateTime<Utc>,
    /// Jobs per state, summed over `types`.
    pub totals: StateCountsView,
    /// Seconds the oldest ready job has waited since its `run_at` (null: none ready).
    #[schema(required = true, minimum = 0)]
    pub oldest_ready_age_seconds: Option<f64>,
    /// Attempts ended by an expired lease within the last hour.
    #[schema(minimum = 0)]
    pub lease_expirations_last_hour: i64,
    /// One row per job type that is registered or has jobs.
    pub types: Vec<TypeStatsView>,
}

impl From<Stats> for StatsView {
    fn from(s: Stats) -> Self {
        StatsView {
            tenant: s.tenant,
            as_of: s.as_of,
            totals: s.totals.into(),
            oldest_ready_age_seconds: s.oldest_ready_age_seconds,
            lease_expirations_last_hour: s.lease_expirations_last_hour,
            types: s.types.into_iter().map(Into::into).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schemas::tests::{keys, properties};

    #[test]
    fn the_stats_schema_names_exactly_the_fields_stats_serialise() {
        let stats = Stats {
            tenant: Some("acme".into()),
            as_of: Utc::now(),
            totals: Default::default(),
            oldest_ready_age_seconds: None,
            lease_expirations_last_hour: 0,
            types: vec![TypeStats {
                tenant: "acme".into(),
                job_type: "report".into(),
                registered: true,
                counts: Default::default(),
                oldest_ready_age_seconds: Some(1.5),
                lease_expirations_last_hour: 0,
                paused: false,
                held: Default::default(),
            }],
        };
        let value = serde_json::to_value(StatsView::from(stats)).unwrap();
        assert_eq!(keys(&value), properties::<StatsView>());
        assert_eq!(keys(&value["totals"]), properties::<StateCountsView>());
        assert_eq!(keys(&value["types"][0]), properties::<TypeStatsView>());
        assert_eq!(keys(&value["types"][0]["held"]), properties::<HeldView>());
    }
}
