//! The limits of a grant and the clamping of timeouts: every timeout is
//! `min(guest's request, policy cap, time left until the attempt deadline)`.
//! Pure arithmetic; no I/O.

use std::time::Duration;

use tokio::time::Instant;

/// Caps the operator/grant imposes on one request. The defaults are conservative.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// DNS lookup (default 5 s).
    pub dns_timeout: Duration,
    /// TCP connect + TLS handshake + HTTP/1 handshake (default 10 s).
    pub connect_timeout: Duration,
    /// From sending the request to the response head (default 30 s).
    pub first_byte_timeout: Duration,
    /// Between two chunks of the response body (default 30 s).
    pub between_bytes_timeout: Duration,
    /// Total request body bytes (default 10 MiB).
    pub max_request_body_bytes: u64,
    /// Total response body bytes (default 10 MiB).
    pub max_response_body_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            dns_timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(30),
            between_bytes_timeout: Duration::from_secs(30),
            max_request_body_bytes: 10 << 20,
            max_response_body_bytes: 10 << 20,
        }
    }
}

/// Timeouts the guest asked for (`wasi:http` `request-options`); `None` = no preference.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestTimeouts {
    /// `connect-timeout`: capped by [`Limits::connect_timeout`].
    pub connect: Option<Duration>,
    /// `first-byte-timeout`: capped by [`Limits::first_byte_timeout`].
    pub first_byte: Option<Duration>,
    /// `between-bytes-timeout`: capped by [`Limits::between_bytes_timeout`].
    pub between_bytes: Option<Duration>,
}

/// `min(guest, cap, deadline - now)`; zero when the deadline has passed.
pub fn clamp(guest: Option<Duration>, cap: Duration, deadline: Instant, now: Instant) -> Duration {
    let left = deadline.saturating_duration_since(now);
    guest.map_or(cap, |g| g.min(cap)).min(left)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_of_guest_cap_and_time_left_wins() {
        let now = Instant::now();
        let s = Duration::from_secs;
        assert_eq!(clamp(None, s(10), now + s(60), now), s(10));
        assert_eq!(clamp(Some(s(3)), s(10), now + s(60), now), s(3));
        assert_eq!(clamp(Some(s(600)), s(10), now + s(60), now), s(10));
        assert_eq!(clamp(Some(s(600)), s(10), now + s(2), now), s(2));
        assert_eq!(clamp(None, s(10), now, now), Duration::ZERO);
        assert_eq!(clamp(None, s(10), now, now + s(1)), Duration::ZERO);
    }
}
