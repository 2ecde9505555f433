//! A job type's resource limits for one attempt: the host's defaults, overridden by
//! what the type sets, then bounded by its tenant's caps (which never raise a limit).
//!
//! Pure functions over records the registry read; must not read the store or cache.

use std::time::Duration;

use sluice_sandbox::Limits;
use sluice_store::{JobTypeRecord, TenantLimits};

/// `limits` bounded by a tenant's caps: a cap lowers a limit, never raises it; "no
/// timeout" becomes the tenant's timeout cap.
pub(super) fn capped(mut limits: Limits, caps: &TenantLimits) -> Limits {
    let cap = |cap: Option<i64>, slot: &mut u64| {
        if let Some(c) = cap {
            *slot = (*slot).min(c.max(0) as u64);
        }
    };
    cap(caps.max_fuel, &mut limits.fuel);
    cap(caps.max_memory_bytes, &mut limits.memory_bytes);
    cap(caps.max_output_bytes, &mut limits.output_bytes);
    cap(caps.max_log_bytes, &mut limits.log_bytes);
    if let Some(ms) = caps.max_timeout_ms {
        let most = Duration::from_millis(ms.max(1) as u64);
        limits.timeout = Some(limits.timeout.map_or(most, |t| t.min(most)));
    }
    limits
}

/// Job-type limits over the host defaults: a type may only set what it names.
pub(super) fn limits_for(defaults: &Limits, record: &JobTypeRecord) -> Limits {
    let mut limits = defaults.clone();
    if record.timeout_ms.is_some() {
        limits.timeout = record.timeout().filter(|t| !t.is_zero());
    }
    let set = |value: Option<i64>, slot: &mut u64| {
        if let Some(v) = value {
            *slot = v.max(0) as u64;
        }
    };
    set(record.fuel, &mut limits.fuel);
    set(record.memory_bytes, &mut limits.memory_bytes);
    set(record.output_bytes, &mut limits.output_bytes);
    set(record.log_bytes, &mut limits.log_bytes);
    limits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_caps_bound_type_and_host_limits_but_never_raise_them() {
        let host = Limits {
            fuel: 5_000_000_000,
            timeout: None,
            memory_bytes: 128 << 20,
            ..Limits::default()
        };
        let caps = TenantLimits {
            max_fuel: Some(1_000_000),
            max_timeout_ms: Some(30_000),
            max_memory_bytes: Some(1 << 30),
            ..TenantLimits::default()
        };
        let got = capped(host.clone(), &caps);
        assert_eq!(got.fuel, 1_000_000);
        // "No timeout" becomes the tenant's cap.
        assert_eq!(got.timeout, Some(Duration::from_secs(30)));
        // A cap above the limit leaves it alone.
        assert_eq!(got.memory_bytes, 128 << 20);
        // No caps: nothing changes.
        let same = capped(host.clone(), &TenantLimits::default());
        assert_eq!((same.fuel, same.timeout), (host.fuel, host.timeout));
    }
}
