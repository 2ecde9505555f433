//! Flow control (issue #38, docs/flow-control.md): pausing job types and tenants, a job
//! type's caps on running jobs (fleet-wide and per concurrency key) and its token-bucket
//! rate limits (why a pending job is held back: `held.rs`).
//!
//! Owns: the statements that change these settings and read them back. The claim that enforces them is `sluice.claim(...)`
//! (migration 0024; `lease.rs` calls it); concurrency keys are given at enqueue.
//! Must not: decide what the claim takes (only the claim statement does), or change a
//! job's state.

use std::time::Duration;

use crate::validate::{validate_job_type_name, validate_tenant_id};
use crate::{Store, StoreError};

const SET_TYPE: &str = include_str!("../sql/flow/set_type.sql");
const GET_TYPE: &str = include_str!("../sql/flow/get_type.sql");
const SET_TENANT_PAUSED: &str = include_str!("../sql/tenants/set_paused.sql");

/// A token bucket: `count` per `period`, bursting to `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    /// Jobs started per period (and the burst).
    pub count: u32,
    /// The period the count refills over.
    pub period: Duration,
}

impl Rate {
    /// Parses `N/PERIOD`: N from 1 to 999,999,999 jobs, PERIOD a number from 1 to 999
    /// (none: 1) and a unit, `ms`, `s`, `m`, `h` or `d`: `100/1m`, `5/1s`, `10/500ms`,
    /// `100/m`. No leading zeros (the HTTP API's schema states the same grammar).
    pub fn parse(text: &str) -> Result<Rate, String> {
        let bad = || {
            format!(
                "`{text}` is not N/PERIOD: N from 1 to 999999999, PERIOD from 1 to 999 of ms, s, m, h or d (e.g. 100/1m)"
            )
        };
        let (count, period) = text.split_once('/').ok_or_else(bad)?;
        let number = |digits: &str, max_len: usize| {
            (!digits.is_empty()
                && digits.len() <= max_len
                && !digits.starts_with('0')
                && digits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| digits.parse::<u64>().ok())
            .flatten()
        };
        let count = number(count, 9).ok_or_else(bad)? as u32;
        let split = period.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        let (n, unit) = period.split_at(split);
        let n = if n.is_empty() {
            1
        } else {
            number(n, 3).ok_or_else(bad)?
        };
        let unit_ms: u64 = match unit {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            _ => return Err(bad()),
        };
        Ok(Rate {
            count,
            period: Duration::from_millis(n * unit_ms),
        })
    }

    fn from_row(count: Option<i32>, period_ms: Option<i64>) -> Option<Rate> {
        Some(Rate {
            count: u32::try_from(count?).ok()?,
            period: Duration::from_millis(u64::try_from(period_ms?).ok()?),
        })
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = self.period.as_millis();
        let (n, unit) = [
            (86_400_000, "d"),
            (3_600_000, "h"),
            (60_000, "m"),
            (1_000, "s"),
        ]
        .into_iter()
        .find(|(u, _)| ms.is_multiple_of(*u))
        .map(|(u, name)| (ms / u, name))
        .unwrap_or((ms, "ms"));
        write!(f, "{}/{n}{unit}", self.count)
    }
}

/// A job type's flow controls as stored (null: none).
#[derive(Clone, Debug, Default, PartialEq, sqlx::FromRow)]
pub struct FlowLimits {
    /// Paused: none of its jobs is claimed.
    pub paused: bool,
    /// Its jobs running at once, fleet-wide.
    pub max_running: Option<i32>,
    /// Its jobs of one concurrency key running at once.
    pub max_running_per_key: Option<i32>,
    /// The type-wide rate's count.
    pub rate_count: Option<i32>,
    /// The type-wide rate's period, in milliseconds.
    pub rate_period_ms: Option<i64>,
    /// The per-key rate's count.
    pub key_rate_count: Option<i32>,
    /// The per-key rate's period, in milliseconds.
    pub key_rate_period_ms: Option<i64>,
    /// Snoozes one job may take (`None`: the host's default).
    pub max_snoozes: Option<i32>,
}

impl FlowLimits {
    /// The type-wide rate, if any.
    pub fn rate(&self) -> Option<Rate> {
        Rate::from_row(self.rate_count, self.rate_period_ms)
    }

    /// The per-key rate, if any.
    pub fn rate_per_key(&self) -> Option<Rate> {
        Rate::from_row(self.key_rate_count, self.key_rate_period_ms)
    }
}

/// A change of a job type's flow controls: `None` keeps a field, `Some(None)` clears a
/// limit.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowChange {
    /// Pause or resume.
    pub paused: Option<bool>,
    /// The type's cap on running jobs.
    pub max_running: Option<Option<u32>>,
    /// The cap on running jobs per concurrency key.
    pub max_running_per_key: Option<Option<u32>>,
    /// The type-wide rate.
    pub rate: Option<Option<Rate>>,
    /// The per-key rate.
    pub rate_per_key: Option<Option<Rate>>,
    /// Snoozes one job may take (`Some(None)`: back to the host's default); 0 allowed.
    pub max_snoozes: Option<Option<u32>>,
}

/// A job type's flow controls and their state now.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowSettings {
    /// Paused: none of its jobs is claimed.
    pub paused: bool,
    /// Its jobs running at once, fleet-wide.
    pub max_running: Option<u32>,
    /// Its jobs of one concurrency key running at once.
    pub max_running_per_key: Option<u32>,
    /// The type-wide rate.
    pub rate: Option<Rate>,
    /// The per-key rate.
    pub rate_per_key: Option<Rate>,
    /// Its running jobs, counted only when `max_running` is set.
    pub running: Option<i64>,
    /// Tokens in its bucket now, when `rate` is set.
    pub tokens: Option<f64>,
}

fn positive(field: &'static str, n: Option<u32>) -> Result<Option<i32>, StoreError> {
    n.map(|n| {
        i32::try_from(n)
            .ok()
            .filter(|n| *n > 0)
            .ok_or(StoreError::InvalidInput {
                field,
                message: format!("must be from 1 to {}, got {n}", i32::MAX),
            })
    })
    .transpose()
}

impl Store {
    /// Changes a job type's flow controls in one statement; turning on a type-wide
    /// control (pause, cap, rate) moves its pending jobs to the lane the claim checks.
    pub async fn set_flow(
        &self,
        tenant: &str,
        job_type: &str,
        change: &FlowChange,
    ) -> Result<(), StoreError> {
        validate_tenant_id(tenant).map_err(|_| StoreError::UnknownTenant(tenant.into()))?;
        validate_job_type_name(job_type)?;
        let mut patch = serde_json::Map::new();
        if let Some(paused) = change.paused {
            patch.insert("paused".into(), paused.into());
        }
        if let Some(n) = change.max_running {
            patch.insert("max_running".into(), positive("max_running", n)?.into());
        }
        if let Some(n) = change.max_running_per_key {
            let n = positive("max_running_per_key", n)?;
            patch.insert("max_running_per_key".into(), n.into());
        }
        if let Some(n) = change.max_snoozes {
            let n = n
                .map(|n| {
                    i32::try_from(n).map_err(|_| StoreError::InvalidInput {
                        field: "max_snoozes",
                        message: format!("must be from 0 to {}, got {n}", i32::MAX),
                    })
                })
                .transpose()?;
            patch.insert("max_snoozes".into(), n.into());
        }
        for (rate, count, period, field) in [
            (change.rate, "rate_count", "rate_period_ms", "rate"),
            (
                change.rate_per_key,
                "key_rate_count",
                "key_rate_period_ms",
                "rate_per_key",
            ),
        ] {
            if let Some(rate) = rate {
                let n = positive(field, rate.map(|r| r.count))?;
                let ms = rate.map(|r| r.period.as_millis() as i64);
                patch.insert(count.into(), n.into());
                patch.insert(period.into(), ms.into());
            }
        }
        let row: Option<(i64, i64)> = sqlx::query_as(SET_TYPE)
            .bind(tenant)
            .bind(job_type)
            .bind(serde_json::Value::Object(patch))
            .fetch_optional(&self.pool)
            .await?;
        match row {
            Some(_) => Ok(()),
            None => Err(StoreError::UnknownJobType {
                tenant: tenant.into(),
                job_type: job_type.into(),
            }),
        }
    }

    /// A job type's flow controls; `None`: no such type.
    pub async fn get_flow(
        &self,
        tenant: &str,
        job_type: &str,
    ) -> Result<Option<FlowSettings>, StoreError> {
        type Row = (
            bool,
            Option<i32>,
            Option<i32>,
            Option<i32>,
            Option<i64>,
            Option<i32>,
            Option<i64>,
            Option<i64>,
            Option<f64>,
        );
        let row: Option<Row> = sqlx::query_as(GET_TYPE)
            .bind(tenant)
            .bind(job_type)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| FlowSettings {
            paused: r.0,
            max_running: r.1.map(|n| n as u32),
            max_running_per_key: r.2.map(|n| n as u32),
            rate: Rate::from_row(r.3, r.4),
            rate_per_key: Rate::from_row(r.5, r.6),
            running: r.7,
            tokens: r.8,
        }))
    }

    /// Pauses (`true`) or resumes a tenant: the claim leaves its jobs pending, running
    /// ones finish.
    pub async fn set_tenant_paused(&self, tenant: &str, paused: bool) -> Result<(), StoreError> {
        validate_tenant_id(tenant).map_err(|_| StoreError::UnknownTenant(tenant.into()))?;
        let row: Option<(String,)> = sqlx::query_as(SET_TENANT_PAUSED)
            .bind(tenant)
            .bind(paused)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|_| ())
            .ok_or_else(|| StoreError::UnknownTenant(tenant.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_and_print() {
        let r = Rate::parse("100/1m").unwrap();
        assert_eq!((r.count, r.period), (100, Duration::from_secs(60)));
        assert_eq!(r.to_string(), "100/1m");
        assert_eq!(Rate::parse("5/s").unwrap().to_string(), "5/1s");
        assert_eq!(Rate::parse("10/500ms").unwrap().to_string(), "10/500ms");
        assert_eq!(Rate::parse("7/90s").unwrap().to_string(), "7/90s");
        assert_eq!(Rate::parse("5/999d").unwrap().to_string(), "5/999d");
        for bad in [
            "100",
            "0/1m",
            "x/1m",
            "5/1",
            "5/1y",
            "5/0s",
            "5/1000d",
            "05/1s",
            "5/01s",
            "5/+1s",
            "1000000000/1s",
            " 5/1s",
            "5/1s ",
        ] {
            assert!(Rate::parse(bad).is_err(), "{bad}");
        }
    }
}
