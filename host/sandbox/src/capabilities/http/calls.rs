//! What outbound HTTP hands around: [`HttpGrant`] (what an attempt may reach, or the
//! [`RecordedHttp`] that answers it, with the `METHOD url` key requests are matched by),
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

/// What one attempt may reach: the destinations and caps, and how many requests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpGrant {
    /// The allow list, the tenant's bound and the per-request limits.
    pub grant: Grant,
    /// Requests one attempt may start; the next ones are denied.
    pub max_requests: u32,
    /// `Some`: every request is answered from these recorded responses and none leaves
    /// the host (`sluice test`; `recorded.rs` has the matching rule); the allow list is
    /// not consulted, and a durable job's requests are not journaled (they are answered
    /// before the journal is reached). `None`: requests go to the network through the
    /// egress policy.
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

/// Responses an attempt's outbound requests are answered with, instead of the network.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordedHttp {
    /// In the order they are used: the first unused match answers a request.
    pub responses: Vec<RecordedResponse>,
}

/// One recorded response and the request it answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedResponse {
    /// The request's method (`GET`, `POST`, …; ASCII case ignored).
    pub method: String,
    /// The request's absolute URL (`https://api.example/v1/x?q=1`).
    pub url: String,
    /// The response's status code.
    pub status: u16,
    /// The response's headers, in order.
    pub headers: Vec<(String, String)>,
    /// The response's body.
    pub body: Vec<u8>,
}

impl RecordedResponse {
    /// Why this response cannot be used (a URL that is not absolute, a status outside
    /// 100–999, a header that is not valid HTTP), or `Ok`.
    pub fn check(&self) -> Result<(), String> {
        http::Method::from_bytes(self.method.as_bytes())
            .map_err(|_| format!("`{}` is not an HTTP method", self.method))?;
        url_key(&self.url)?;
        http::StatusCode::from_u16(self.status)
            .map_err(|_| format!("{} is not an HTTP status code", self.status))?;
        for (name, value) in &self.headers {
            http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("`{name}` is not an HTTP header name"))?;
            http::HeaderValue::from_str(value)
                .map_err(|_| format!("the value of header `{name}` is not valid HTTP"))?;
        }
        Ok(())
    }
}

/// `METHOD url`, the way a request is matched and named (`GET http://api.example/x`).
pub(super) fn request_key(method: &str, uri: &http::Uri) -> String {
    format!("{} {}", method.to_ascii_uppercase(), uri_key(uri))
}

fn uri_key(uri: &http::Uri) -> String {
    let scheme = uri.scheme_str().unwrap_or("").to_ascii_lowercase();
    let authority = uri
        .authority()
        .map_or(String::new(), |a| a.as_str().to_ascii_lowercase());
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let path = if path.is_empty() { "/" } else { path };
    format!("{scheme}://{authority}{path}")
}

pub(super) fn url_key(url: &str) -> Result<String, String> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| format!("`{url}` is not a URL: {e}"))?;
    if uri.scheme().is_none() || uri.authority().is_none() {
        return Err(format!(
            "`{url}` is not an absolute URL (scheme://host/path)"
        ));
    }
    Ok(uri_key(&uri))
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
