//! What outbound HTTP hands around: [`HttpGrant`] (what an attempt may reach),
//! [`HttpCall`] / [`HttpCalls`] (what its requests did), the counters they share, the
//! futures `send_request` returns and the `wasi:http` error code of each egress failure.
//! Shared by the hooks (`hooks.rs`) and a durable job's journaled requests
//! (`journaled.rs`).
//!
//! Must not send anything.

use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sluice_egress::{EgressError, Grant};
use wasmtime_wasi_http::{Error, WasiBody};

use super::recorded::RecordedHttp;

/// What one attempt may reach: the destinations and caps, and how many requests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpGrant {
    /// The allow list, the tenant's bound and the per-request limits.
    pub grant: Grant,
    /// Requests one attempt may start; the next ones are denied.
    pub max_requests: u32,
    /// `Some`: every request is answered from these recorded responses and none leaves
    /// the host (`sluice test`; `recorded.rs` has the matching rule); the allow list is
    /// not consulted. `None`: requests go to the network through the egress policy.
    pub recorded: Option<Arc<RecordedHttp>>,
}

/// One outbound request of an attempt, for metrics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpCall {
    /// `ok`, `denied`, `timeout` or `error`.
    pub outcome: &'static str,
    /// From the guest's `handle` to the response head (or the failure).
    pub duration: Duration,
}

/// Every outbound request of an attempt, and the body bytes that crossed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpCalls {
    /// One entry per request the guest started, in the order started.
    pub calls: Vec<HttpCall>,
    /// Request body bytes the guest sent.
    pub bytes_out: u64,
    /// Response body bytes the guest read.
    pub bytes_in: u64,
    /// Under recorded HTTP ([`HttpGrant::recorded`]): each request nothing recorded
    /// answered, as `METHOD url` (`GET http://api.example/x`), in the order made.
    pub unmatched: Vec<String>,
}

#[derive(Debug, Default)]
pub(super) struct Shared {
    pub(super) calls: Mutex<Vec<HttpCall>>,
    pub(super) bytes_out: AtomicU64,
    pub(super) bytes_in: AtomicU64,
}

pub(super) type IoFuture = Box<dyn Future<Output = Result<(), Error>> + Send>;
pub(super) type SendFuture =
    Box<dyn Future<Output = Result<(http::Response<WasiBody>, IoFuture), Error>> + Send>;

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub(super) fn record(shared: &Shared, outcome: &'static str, duration: Duration) {
    lock(&shared.calls).push(HttpCall { outcome, duration });
}

/// The `wasi:http` error code of each egress failure (one to one).
pub(super) fn to_wasi(error: EgressError) -> Error {
    match error {
        EgressError::HttpRequestDenied(_) => Error::HttpRequestDenied,
        EgressError::DestinationIpProhibited { .. } => Error::DestinationIpProhibited,
        EgressError::DestinationIpUnroutable { .. } => Error::DestinationIpUnroutable,
        EgressError::DnsTimeout { .. } => Error::DnsTimeout,
        EgressError::DnsError { .. } => Error::DnsError {
            rcode: None,
            info_code: None,
        },
        EgressError::ConnectionRefused { .. } => Error::ConnectionRefused,
        EgressError::ConnectionTimeout { .. } => Error::ConnectionTimeout,
        EgressError::ConnectionReadTimeout { .. } => Error::ConnectionReadTimeout,
        EgressError::ConnectionTerminated { .. } => Error::ConnectionTerminated,
        EgressError::HttpRequestUriInvalid(_) => Error::HttpRequestUriInvalid,
        EgressError::HttpRequestBodySize { cap } => Error::HttpRequestBodySize(Some(cap)),
        EgressError::HttpResponseBodySize(cap) => Error::HttpResponseBodySize(Some(cap)),
        EgressError::TlsCertificateError { .. } => Error::TlsCertificateError,
        EgressError::TlsProtocolError { .. } => Error::TlsProtocolError,
        EgressError::HttpProtocolError { .. } => Error::HttpProtocolError,
        EgressError::InternalError(detail) => Error::InternalError(Some(detail)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_keep_their_error_code() {
        let denied = to_wasi(EgressError::HttpResponseBodySize(10));
        assert!(matches!(denied, Error::HttpResponseBodySize(Some(10))));
        let internal = to_wasi(EgressError::InternalError("x".into()));
        assert!(matches!(internal, Error::InternalError(Some(s)) if s == "x"));
    }
}
