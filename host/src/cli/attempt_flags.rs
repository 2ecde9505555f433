//! The flags that bound one attempt, shared by `sluice types set` (stored on the job
//! type) and `sluice run` (applied to the one local attempt), so both take the same names,
//! units and help: [`LimitFlags`] (timeout, fuel, memory, output, log) and [`HttpFlags`]
//! (the allow list and the per-request caps of outbound HTTP).
//!
//! Owns: those flags' names, parsers (`sluice_shared::units`) and help, and their
//! conversion to the store's [`HttpSpec`] and the sandbox's [`Limits`]. Must not: check
//! allow lists (`sluice_shared::grants` does) or open anything.

use std::time::Duration;

use sluice_sandbox::Limits;
use sluice_shared::units::{parse_duration, parse_size};
use sluice_store::HttpSpec;

/// Per-attempt limits; unset ones keep the host default.
#[derive(Debug, Clone, clap::Args)]
pub struct LimitFlags {
    /// Wall-clock limit per attempt (`0` = none: only fuel bounds the attempt).
    #[arg(long, value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// Fuel (CPU) units per attempt.
    #[arg(long)]
    pub fuel: Option<u64>,
    /// Linear memory per attempt, e.g. `64MiB`.
    #[arg(long, value_parser = parse_size)]
    pub memory: Option<u64>,
    /// Largest output an attempt may return.
    #[arg(long, value_parser = parse_size)]
    pub max_output: Option<u64>,
    /// Log bytes kept per attempt (the rest is dropped).
    #[arg(long, value_parser = parse_size)]
    pub max_log: Option<u64>,
}

impl LimitFlags {
    /// These flags over `defaults`: only what a flag names changes (`--timeout 0`: no
    /// timeout), as a job type's limits go over the worker's.
    pub fn over(&self, defaults: Limits) -> Limits {
        Limits {
            timeout: match self.timeout {
                Some(t) if t.is_zero() => None,
                Some(t) => Some(t),
                None => defaults.timeout,
            },
            fuel: self.fuel.unwrap_or(defaults.fuel),
            memory_bytes: self.memory.unwrap_or(defaults.memory_bytes),
            output_bytes: self.max_output.unwrap_or(defaults.output_bytes),
            log_bytes: self.max_log.unwrap_or(defaults.log_bytes),
            ..defaults
        }
    }
}

/// Outbound HTTP: where an attempt may call, and how much.
#[derive(Debug, Clone, clap::Args)]
pub struct HttpFlags {
    /// Let attempts call this destination over HTTP: `scheme://host[:port]` or
    /// `scheme://*.suffix[:port]` (no port: the scheme's default only). Repeatable;
    /// none: no outbound HTTP (docs/egress.md).
    #[arg(long = "allow-http", value_name = "URL")]
    pub allow_http: Vec<String>,
    /// Outbound requests one attempt may start (default 20).
    #[arg(long)]
    pub http_max_requests: Option<u32>,
    /// Largest request body of one outbound request (default 10MiB).
    #[arg(long, value_parser = parse_size)]
    pub http_max_request_body: Option<u64>,
    /// Largest response body of one outbound request (default 10MiB).
    #[arg(long, value_parser = parse_size)]
    pub http_max_response_body: Option<u64>,
    /// Longest wait to connect (TCP + TLS) per outbound request (default 10s).
    #[arg(long, value_parser = parse_duration)]
    pub http_connect_timeout: Option<Duration>,
    /// Longest wait for a response head per outbound request (default 30s).
    #[arg(long, value_parser = parse_duration)]
    pub http_first_byte_timeout: Option<Duration>,
    /// Longest wait between two pieces of a response body (default 30s).
    #[arg(long, value_parser = parse_duration)]
    pub http_between_bytes_timeout: Option<Duration>,
}

impl HttpFlags {
    /// The grant as the store keeps it (entries as written; `None`: the host default).
    pub fn spec(self) -> HttpSpec {
        HttpSpec {
            allow: self.allow_http,
            max_requests: self.http_max_requests,
            request_bytes: self.http_max_request_body,
            response_bytes: self.http_max_response_body,
            connect_timeout: self.http_connect_timeout,
            first_byte_timeout: self.http_first_byte_timeout,
            between_bytes_timeout: self.http_between_bytes_timeout,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_flags_given_change_the_defaults_and_a_zero_timeout_is_none() {
        let none = LimitFlags {
            timeout: None,
            fuel: None,
            memory: None,
            max_output: None,
            max_log: None,
        };
        assert_eq!(none.over(Limits::default()), Limits::default());
        let some = LimitFlags {
            timeout: Some(Duration::ZERO),
            fuel: Some(1000),
            ..none
        };
        let limits = some.over(Limits::default());
        assert_eq!(limits.timeout, None);
        assert_eq!(limits.fuel, 1000);
        assert_eq!(limits.memory_bytes, Limits::default().memory_bytes);
    }
}
