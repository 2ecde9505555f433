//! `sluice tenants limits`: the flags that change a tenant's caps and daily quotas, how
//! they apply to the stored limits (unset ones are kept), and how the limits print.
//! Must not: talk to the store (`tenants` reads and writes the row).

use std::time::Duration;

use anyhow::Context;
use sluice_store::{TenantLimits, TenantRecord};

use sluice_shared::units::{format_size, parse_duration, parse_size};

#[derive(Debug, clap::Args)]
pub struct LimitsArgs {
    /// The tenant.
    pub id: String,
    /// Largest job payload, e.g. `1MiB`.
    #[arg(long, value_parser = parse_size)]
    pub max_payload: Option<u64>,
    /// Largest component upload, e.g. `20MiB`.
    #[arg(long, value_parser = parse_size)]
    pub max_component: Option<u64>,
    /// Enqueue rate over HTTP: `100/s`, `600/min`, `10/h` (a bare number is per second).
    #[arg(long, value_parser = parse_rate)]
    pub rate: Option<f64>,
    /// Jobs accepted at once after a quiet period (default: one second's worth of --rate).
    #[arg(long)]
    pub burst: Option<u32>,
    /// Cap on a job type's fuel per attempt.
    #[arg(long)]
    pub max_fuel: Option<u64>,
    /// Cap on a job type's memory per attempt, e.g. `256MiB`.
    #[arg(long, value_parser = parse_size)]
    pub max_memory: Option<u64>,
    /// Cap on a job type's timeout per attempt, e.g. `5m`.
    #[arg(long, value_parser = parse_duration)]
    pub max_timeout: Option<Duration>,
    /// Cap on an attempt's output.
    #[arg(long, value_parser = parse_size)]
    pub max_output: Option<u64>,
    /// Cap on the log bytes kept per attempt.
    #[arg(long, value_parser = parse_size)]
    pub max_log: Option<u64>,
    /// Cap on a job type's outbound requests per attempt.
    #[arg(long)]
    pub max_http_requests: Option<u32>,
    /// Cap on a job type's request body per outbound request.
    #[arg(long, value_parser = parse_size)]
    pub max_http_request_body: Option<u64>,
    /// Cap on a job type's response body per outbound request.
    #[arg(long, value_parser = parse_size)]
    pub max_http_response_body: Option<u64>,
    /// Follow-up jobs one attempt may enqueue (default 1000; 0: none).
    #[arg(long)]
    pub max_follow_ups: Option<u32>,
    /// Payload bytes of one attempt's follow-up jobs together, e.g. `16MiB` (the default).
    #[arg(long, value_parser = parse_size)]
    pub max_follow_up_bytes: Option<u64>,
    /// Cap on one durable job's journal, e.g. `4MiB` (default: the type's, 16 MiB).
    #[arg(long, value_parser = parse_size)]
    pub max_journal_bytes: Option<u64>,
    /// Daily quota (UTC days): runs the tenant's jobs may start per day; past it they stay
    /// pending, no attempt spent, until midnight UTC or a higher quota (docs/usage.md).
    #[arg(long)]
    pub max_attempts_per_day: Option<u64>,
    /// Daily quota: fuel the tenant's runs may burn per day (checked against what ended
    /// runs burned, so runs going when it is reached may pass it).
    #[arg(long)]
    pub max_fuel_per_day: Option<u64>,
    /// Daily quota: outbound HTTP body bytes, sent and received, per day, e.g. `1GiB`.
    #[arg(long, value_parser = parse_size)]
    pub max_egress_bytes_per_day: Option<u64>,
    /// Reset a limit to the host default, or lift a daily quota (repeatable): payload,
    /// component, rate, burst, fuel, memory, timeout, output, log, http-requests,
    /// http-request-body, http-response-body, follow-ups, follow-up-bytes, journal-bytes,
    /// attempts-per-day, fuel-per-day, egress-bytes-per-day.
    #[arg(long, value_parser = ["payload", "component", "rate", "burst", "fuel", "memory", "timeout", "output", "log", "http-requests", "http-request-body", "http-response-body", "follow-ups", "follow-up-bytes", "journal-bytes", "attempts-per-day", "fuel-per-day", "egress-bytes-per-day"])]
    pub unset: Vec<String>,
}

/// Parses `100/s`, `600/min`, `10/h` or a bare number (per second) into jobs per second.
pub fn parse_rate(text: &str) -> Result<f64, String> {
    let (count, per) = text.split_once('/').unwrap_or((text, "s"));
    let count: f64 = count
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a rate; try `100/s`, `600/min` or `10/h`"))?;
    let seconds = match per.trim() {
        "s" | "sec" | "second" => 1.0,
        "m" | "min" | "minute" => 60.0,
        "h" | "hour" => 3600.0,
        other => return Err(format!("`{other}` is not a rate unit; use s, min or h")),
    };
    let rate = count / seconds;
    if rate.is_finite() && rate > 0.0 {
        Ok(rate)
    } else {
        Err(format!("`{text}` is not a positive rate"))
    }
}

fn to_i64(field: &str, v: u64) -> anyhow::Result<i64> {
    i64::try_from(v).with_context(|| format!("--{field} {v} is too large"))
}

pub(super) fn apply(mut limits: TenantLimits, args: &LimitsArgs) -> anyhow::Result<TenantLimits> {
    for field in &args.unset {
        match field.as_str() {
            "payload" => limits.max_payload_bytes = None,
            "component" => limits.max_component_bytes = None,
            "rate" => limits.max_enqueue_per_sec = None,
            "burst" => limits.enqueue_burst = None,
            "fuel" => limits.max_fuel = None,
            "memory" => limits.max_memory_bytes = None,
            "timeout" => limits.max_timeout_ms = None,
            "output" => limits.max_output_bytes = None,
            "http-requests" => limits.max_http_requests = None,
            "http-request-body" => limits.max_http_request_bytes = None,
            "http-response-body" => limits.max_http_response_bytes = None,
            "follow-ups" => limits.max_follow_ups = None,
            "follow-up-bytes" => limits.max_follow_up_bytes = None,
            "journal-bytes" => limits.max_journal_bytes = None,
            "attempts-per-day" => limits.max_attempts_per_day = None,
            "fuel-per-day" => limits.max_fuel_per_day = None,
            "egress-bytes-per-day" => limits.max_egress_bytes_per_day = None,
            _ => limits.max_log_bytes = None,
        }
    }
    if let Some(v) = args.max_payload {
        limits.max_payload_bytes =
            Some(i32::try_from(v).context("--max-payload must be below 2 GiB")?);
    }
    if let Some(v) = args.max_component {
        limits.max_component_bytes = Some(to_i64("max-component", v)?);
    }
    if let Some(v) = args.rate {
        limits.max_enqueue_per_sec = Some(v);
    }
    if let Some(v) = args.burst {
        limits.enqueue_burst = Some(i32::try_from(v).context("--burst is too large")?);
    }
    if let Some(v) = args.max_fuel {
        limits.max_fuel = Some(to_i64("max-fuel", v)?);
    }
    if let Some(v) = args.max_memory {
        limits.max_memory_bytes = Some(to_i64("max-memory", v)?);
    }
    if let Some(d) = args.max_timeout {
        limits.max_timeout_ms = Some(to_i64("max-timeout", d.as_millis() as u64)?);
    }
    if let Some(v) = args.max_output {
        limits.max_output_bytes = Some(to_i64("max-output", v)?);
    }
    if let Some(v) = args.max_log {
        limits.max_log_bytes = Some(to_i64("max-log", v)?);
    }
    if let Some(v) = args.max_http_requests {
        limits.max_http_requests =
            Some(i32::try_from(v).context("--max-http-requests is too large")?);
    }
    if let Some(v) = args.max_http_request_body {
        limits.max_http_request_bytes = Some(to_i64("max-http-request-body", v)?);
    }
    if let Some(v) = args.max_http_response_body {
        limits.max_http_response_bytes = Some(to_i64("max-http-response-body", v)?);
    }
    if let Some(v) = args.max_follow_ups {
        limits.max_follow_ups = Some(i32::try_from(v).context("--max-follow-ups is too large")?);
    }
    if let Some(v) = args.max_follow_up_bytes {
        limits.max_follow_up_bytes = Some(to_i64("max-follow-up-bytes", v)?);
    }
    if let Some(v) = args.max_journal_bytes {
        limits.max_journal_bytes = Some(to_i64("max-journal-bytes", v)?);
    }
    if let Some(v) = args.max_attempts_per_day {
        limits.max_attempts_per_day = Some(to_i64("max-attempts-per-day", v)?);
    }
    if let Some(v) = args.max_fuel_per_day {
        limits.max_fuel_per_day = Some(to_i64("max-fuel-per-day", v)?);
    }
    if let Some(v) = args.max_egress_bytes_per_day {
        limits.max_egress_bytes_per_day = Some(to_i64("max-egress-bytes-per-day", v)?);
    }
    Ok(limits)
}

pub(super) fn show_limit(v: Option<i64>, unit: fn(i64) -> String) -> String {
    v.map_or_else(|| "default".to_owned(), unit)
}

/// A daily quota for people: there is no host default, so an unset one is none.
fn no_quota(v: Option<i64>, unit: fn(i64) -> String) -> String {
    v.map_or_else(|| "none".to_owned(), unit)
}

pub(super) fn size(v: i64) -> String {
    format_size(v.max(0) as u64)
}

pub(super) fn limit_fields(t: &TenantRecord) -> Vec<(&'static str, String)> {
    let l = &t.limits;
    vec![
        ("tenant", t.id.clone()),
        ("paused", if t.paused { "yes" } else { "no" }.to_owned()),
        (
            "max payload",
            show_limit(l.max_payload_bytes.map(i64::from), size),
        ),
        ("max component", show_limit(l.max_component_bytes, size)),
        (
            "enqueue rate",
            l.max_enqueue_per_sec
                .map_or("unlimited".into(), |r| format!("{r}/s")),
        ),
        (
            "enqueue burst",
            show_limit(l.enqueue_burst.map(i64::from), |b| b.to_string()),
        ),
        ("max fuel", show_limit(l.max_fuel, |v| v.to_string())),
        ("max memory", show_limit(l.max_memory_bytes, size)),
        (
            "max timeout",
            show_limit(l.max_timeout_ms, |ms| format!("{ms}ms")),
        ),
        ("max output", show_limit(l.max_output_bytes, size)),
        ("max log", show_limit(l.max_log_bytes, size)),
        (
            "max http requests",
            show_limit(l.max_http_requests.map(i64::from), |v| v.to_string()),
        ),
        (
            "max http request body",
            show_limit(l.max_http_request_bytes, size),
        ),
        (
            "max http response body",
            show_limit(l.max_http_response_bytes, size),
        ),
        (
            "max follow-ups",
            show_limit(l.max_follow_ups.map(i64::from), |v| v.to_string()),
        ),
        (
            "max follow-up bytes",
            show_limit(l.max_follow_up_bytes, size),
        ),
        ("max journal", show_limit(l.max_journal_bytes, size)),
        (
            "attempts per day",
            no_quota(l.max_attempts_per_day, |v| v.to_string()),
        ),
        (
            "fuel per day",
            no_quota(l.max_fuel_per_day, |v| v.to_string()),
        ),
        (
            "egress bytes per day",
            no_quota(l.max_egress_bytes_per_day, size),
        ),
        (
            "egress bound",
            match &t.egress_allow {
                None => "none (the host's deny list only)".to_owned(),
                Some(list) if list.is_empty() => "deny all".to_owned(),
                Some(list) => list.join(" "),
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::parse_rate;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("100/s").unwrap(), 100.0);
        assert_eq!(parse_rate("600/min").unwrap(), 10.0);
        assert_eq!(parse_rate("7").unwrap(), 7.0);
        assert!(parse_rate("0/s").is_err());
        assert!(parse_rate("5/fortnight").unwrap_err().contains("fortnight"));
    }
}
