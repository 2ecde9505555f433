//! The per-tenant enqueue rate limit: a token bucket per tenant, held in this `sluice
//! serve` process (N processes behind a load balancer accept up to N times the rate).
//!
//! Owns: bucket arithmetic. Must not: touch the database (the rate and burst come from
//! the tenant row the auth extractor loaded) or sleep (a refusal says when to retry).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Buckets by tenant id.
#[derive(Debug, Default)]
pub struct RateLimiter {
    buckets: Mutex<HashMap<String, Bucket>>,
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    refilled_at: Instant,
}

/// Why jobs were refused, and when to try again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Refusal {
    /// Time until enough tokens are back.
    pub retry_after: Duration,
    /// The request asked for more jobs than the bucket can ever hold.
    pub over_burst: bool,
}

/// The bucket size for a rate when the tenant sets none: one second's worth, at least 1.
pub fn default_burst(rate_per_sec: f64) -> f64 {
    rate_per_sec.ceil().max(1.0)
}

impl RateLimiter {
    /// Takes `jobs` tokens from `tenant`'s bucket (refilling at `rate_per_sec` up to
    /// `burst`), or refuses without taking any.
    pub fn try_take(
        &self,
        tenant: &str,
        jobs: usize,
        rate_per_sec: f64,
        burst: f64,
    ) -> Result<(), Refusal> {
        let wanted = jobs as f64;
        let now = Instant::now();
        let mut buckets = self.buckets.lock().expect("rate limiter lock");
        let bucket = buckets.entry(tenant.to_owned()).or_insert(Bucket {
            tokens: burst,
            refilled_at: now,
        });
        let elapsed = now.duration_since(bucket.refilled_at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * rate_per_sec).min(burst);
        bucket.refilled_at = now;
        if wanted <= bucket.tokens {
            bucket.tokens -= wanted;
            return Ok(());
        }
        let over_burst = wanted > burst;
        let missing = if over_burst {
            burst
        } else {
            wanted - bucket.tokens
        };
        Err(Refusal {
            retry_after: Duration::from_secs_f64(missing / rate_per_sec),
            over_burst,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_allowed_then_refused_with_a_wait() {
        let limiter = RateLimiter::default();
        for _ in 0..5 {
            limiter.try_take("a", 1, 1.0, 5.0).unwrap();
        }
        let refusal = limiter.try_take("a", 1, 1.0, 5.0).unwrap_err();
        assert!(!refusal.over_burst);
        assert!(refusal.retry_after > Duration::ZERO);
        assert!(refusal.retry_after <= Duration::from_secs(1));
        // Another tenant has its own bucket.
        limiter.try_take("b", 5, 1.0, 5.0).unwrap();
        // More than the bucket holds can never pass.
        assert!(limiter.try_take("c", 6, 1.0, 5.0).unwrap_err().over_burst);
    }
}
