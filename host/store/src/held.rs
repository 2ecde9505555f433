//! Why a pending job is not running ([`Held`]): a flow control (issue #38,
//! docs/flow-control.md) or a daily quota of its tenant (issue #40, docs/usage.md) that
//! holds a due job back, or the snooze it is in.
//!
//! Owns: the statement that reads these for one job (`sql/flow/held.sql`) and their
//! wording. Must not: decide what the claim takes (only `sluice.claim(...)` does; the
//! reasons here mirror its conditions), or change anything.

use chrono::{DateTime, Utc};

use crate::{Store, StoreError};

const HELD: &str = include_str!("../sql/flow/held.sql");

/// A tenant's daily quota (`sluice tenants limits --max-…-per-day`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quota {
    /// Runs started per day.
    Attempts,
    /// Fuel burned per day.
    Fuel,
    /// Outbound HTTP body bytes (sent and received) per day.
    EgressBytes,
}

impl std::fmt::Display for Quota {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Quota::Attempts => "attempts",
            Quota::Fuel => "fuel",
            Quota::EgressBytes => "egress bytes",
        })
    }
}

/// Why a pending job is not running (the first that applies): a flow control holding a
/// due job back, or the snooze a job is in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Held {
    /// Its tenant is paused.
    TenantPaused,
    /// Its job type is paused.
    TypePaused,
    /// Its type runs `max` jobs, its cap.
    TypeAtCap {
        /// Jobs of the type running now.
        running: i32,
        /// The type's cap.
        max: i32,
    },
    /// Its concurrency key runs `max` jobs, its cap.
    KeyAtCap {
        /// The job's concurrency key.
        key: String,
        /// Jobs of the key running now.
        running: i32,
        /// The cap per key.
        max: i32,
    },
    /// The type's rate has no token until `until`.
    RateLimited {
        /// When the next token comes.
        until: DateTime<Utc>,
    },
    /// Its key's rate has no token until `until`.
    KeyRateLimited {
        /// The job's concurrency key.
        key: String,
        /// When the key's next token comes.
        until: DateTime<Utc>,
    },
    /// Its tenant reached a daily quota (docs/usage.md): nothing of the tenant starts
    /// until the quota day ends at `resumes_at` or the quota is raised.
    QuotaReached {
        /// Which quota.
        quota: Quota,
        /// What the tenant used today, as that quota counts it.
        used: i64,
        /// The quota.
        limit: i64,
        /// When the quota day ends (midnight UTC).
        resumes_at: DateTime<Utc>,
    },
    /// Its last run snoozed (`flow.snooze`) until `until`.
    Snoozed {
        /// When it is due again.
        until: DateTime<Utc>,
    },
}

impl std::fmt::Display for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = |t: &DateTime<Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        match self {
            Held::TenantPaused => write!(f, "tenant paused"),
            Held::TypePaused => write!(f, "type paused"),
            Held::TypeAtCap { running, max } => {
                write!(f, "type at its cap ({running}/{max} running)")
            }
            Held::KeyAtCap { key, running, max } => {
                write!(f, "waiting for key {key} ({running}/{max} running)")
            }
            Held::RateLimited { until } => write!(f, "rate limited until {}", at(until)),
            Held::KeyRateLimited { key, until } => {
                write!(f, "key {key} rate limited until {}", at(until))
            }
            Held::Snoozed { until } => write!(f, "snoozed until {}", at(until)),
            Held::QuotaReached {
                quota,
                used,
                limit,
                resumes_at,
            } => write!(
                f,
                "daily {quota} quota reached ({used}/{limit}); resumes at {}",
                at(resumes_at)
            ),
        }
    }
}

#[derive(sqlx::FromRow)]
struct HeldRow {
    flow_key: Option<String>,
    tenant_paused: bool,
    type_paused: Option<bool>,
    scheduled: bool,
    run_at: DateTime<Utc>,
    snoozed: bool,
    max_running: Option<i32>,
    type_running: Option<i32>,
    max_running_per_key: Option<i32>,
    key_running: Option<i32>,
    type_tokens_at: Option<DateTime<Utc>>,
    key_tokens_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
    max_attempts_per_day: Option<i64>,
    max_fuel_per_day: Option<i64>,
    max_egress_bytes_per_day: Option<i64>,
    day_attempts: Option<i64>,
    day_fuel: Option<i64>,
    day_egress_bytes: Option<i64>,
    quota_resets_at: DateTime<Utc>,
}

impl HeldRow {
    /// The first of the tenant's daily quotas that is used up, as the claim's
    /// `sluice.quota_room` decides it.
    fn quota_reached(&self) -> Option<Held> {
        [
            (Quota::Fuel, self.day_fuel, self.max_fuel_per_day),
            (
                Quota::EgressBytes,
                self.day_egress_bytes,
                self.max_egress_bytes_per_day,
            ),
            (
                Quota::Attempts,
                self.day_attempts,
                self.max_attempts_per_day,
            ),
        ]
        .into_iter()
        .find_map(|(quota, used, limit)| {
            let (used, limit) = (used?, limit?);
            (used >= limit).then_some(Held::QuotaReached {
                quota,
                used,
                limit,
                resumes_at: self.quota_resets_at,
            })
        })
    }

    fn reason(self) -> Option<Held> {
        if self.tenant_paused {
            return Some(Held::TenantPaused);
        }
        if self.type_paused == Some(true) {
            return Some(Held::TypePaused);
        }
        if self.scheduled {
            return self.snoozed.then_some(Held::Snoozed { until: self.run_at });
        }
        if let Some(held) = self.quota_reached() {
            return Some(held);
        }
        if let (Some(max), Some(running)) = (self.max_running, self.type_running)
            && running >= max
        {
            return Some(Held::TypeAtCap { running, max });
        }
        let key = self.flow_key.filter(|k| !k.is_empty());
        if let (Some(key), Some(max)) = (&key, self.max_running_per_key) {
            let running = self.key_running.unwrap_or(0);
            if running >= max {
                return Some(Held::KeyAtCap {
                    key: key.clone(),
                    running,
                    max,
                });
            }
        }
        if let Some(until) = self.type_tokens_at.filter(|t| *t > self.now) {
            return Some(Held::RateLimited { until });
        }
        match (key, self.key_tokens_at.filter(|t| *t > self.now)) {
            (Some(key), Some(until)) => Some(Held::KeyRateLimited { key, until }),
            _ => None,
        }
    }
}

impl Store {
    /// Why job `id` (of `tenant`, when given) is pending though due: `None` when it is
    /// not pending, not due yet, or nothing holds it back.
    pub async fn job_held(
        &self,
        id: i64,
        tenant: Option<&str>,
    ) -> Result<Option<Held>, StoreError> {
        let row: Option<HeldRow> = sqlx::query_as(HELD)
            .bind(id)
            .bind(tenant)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.and_then(HeldRow::reason))
    }
}
