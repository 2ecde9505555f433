//! Outbound HTTP from a task: a small blocking client on `wasi:http/outgoing-handler`
//! (contract `sluice:task@0.2.0`).
//!
//! The host decides what a task may reach: the job type's allow list
//! (`sluice types set T --allow-http https://api.example.com`), the operator's network
//! policy (private, loopback and link-local addresses are refused after name resolution),
//! a request count per attempt, body caps and timeouts bounded by the attempt's own. A
//! refused or failed request is an [`HttpError`] naming the `wasi:http` error code
//! (`HTTP-request-denied`, `destination-IP-prohibited`, `connection-timeout`, …); it never
//! traps. Redirects are returned, not followed.
//!
//! ```no_run
//! use sluice_guest::http;
//! use sluice_guest::serde_json::json;
//!
//! # fn demo() -> Result<(), http::HttpError> {
//! let rates = http::get("https://api.example.com/rates")?;
//! let created = http::Request::post("https://api.example.com/invoices")
//!     .header("authorization", "Bearer …")
//!     .json(&json!({ "amount": 42 }))?
//!     .send()?;
//! if created.status >= 500 {
//!     // a TaskError::retry would go here
//! }
//! # Ok(()) }
//! ```

use std::fmt;
use std::time::Duration;

use crate::TaskError;
use crate::bindings::wasi::http::outgoing_handler;
use crate::bindings::wasi::http::types::{
    ErrorCode, Fields, IncomingBody, Method as WasiMethod, OutgoingBody, OutgoingRequest,
    RequestOptions, Scheme,
};
use crate::bindings::wasi::io::streams::StreamError;

/// Bytes written to the request body per call (the `wasi:io` limit for one
/// `blocking-write-and-flush`).
const WRITE_CHUNK: usize = 4096;
/// Bytes asked for per read of the response body.
const READ_CHUNK: u64 = 64 * 1024;

/// An HTTP method.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Method {
    /// `GET`
    Get,
    /// `HEAD`
    Head,
    /// `POST`
    Post,
    /// `PUT`
    Put,
    /// `PATCH`
    Patch,
    /// `DELETE`
    Delete,
    /// `OPTIONS`
    Options,
}

/// A request, built with [`Request::get`], [`Request::post`] or [`Request::new`] and sent
/// with [`Request::send`].
#[derive(Clone, Debug)]
pub struct Request {
    method: Method,
    url: String,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
    timeout: Option<Duration>,
}

/// A response with its whole body read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// The status code (a 3xx is returned as it is: redirects are never followed).
    pub status: u16,
    /// Header names (lowercase) and values, in the order received.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body bytes.
    pub body: Vec<u8>,
}

/// Why a request failed: the `wasi:http` error code and a readable message. The host's
/// reason (the destination and the rule that refused it) is in the attempt's log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpError {
    /// The `error-code` case, e.g. `HTTP-request-denied`, `destination-IP-prohibited`,
    /// `connection-timeout`, `HTTP-response-body-size`; `invalid-request` for a request
    /// this client could not build (bad URL, forbidden header).
    pub code: String,
    /// Details.
    pub message: String,
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP request failed: {} ({})", self.code, self.message)
    }
}

impl std::error::Error for HttpError {}

impl From<HttpError> for TaskError {
    /// Network trouble is transient by default: a retry with backoff. Map it yourself
    /// where it is not (a refused destination will not change between attempts).
    fn from(e: HttpError) -> Self {
        TaskError::retry(e.to_string())
    }
}

fn invalid(message: impl Into<String>) -> HttpError {
    HttpError {
        code: "invalid-request".into(),
        message: message.into(),
    }
}

/// `GET url`.
pub fn get(url: &str) -> Result<Response, HttpError> {
    Request::get(url).send()
}

/// `POST url` with `value` as a JSON body.
pub fn post_json<T: serde::Serialize + ?Sized>(
    url: &str,
    value: &T,
) -> Result<Response, HttpError> {
    Request::post(url).json(value)?.send()
}

impl Request {
    /// A request with no headers and an empty body.
    pub fn new(method: Method, url: impl Into<String>) -> Self {
        Request {
            method,
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
            timeout: None,
        }
    }

    /// `GET url`.
    pub fn get(url: impl Into<String>) -> Self {
        Self::new(Method::Get, url)
    }

    /// `POST url`.
    pub fn post(url: impl Into<String>) -> Self {
        Self::new(Method::Post, url)
    }

    /// Adds a header (`host` and hop-by-hop headers are refused by the host).
    pub fn header(mut self, name: impl Into<String>, value: impl AsRef<[u8]>) -> Self {
        self.headers.push((name.into(), value.as_ref().to_vec()));
        self
    }

    /// Sets the body bytes.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// Sets a JSON body and `content-type: application/json`.
    pub fn json<T: serde::Serialize + ?Sized>(self, value: &T) -> Result<Self, HttpError> {
        let body = serde_json::to_vec(value).map_err(|e| invalid(format!("JSON body: {e}")))?;
        Ok(self.header("content-type", "application/json").body(body))
    }

    /// Asks for at most `timeout` to connect, to the first byte, and between bytes (the
    /// host clamps it further to its own caps and to the attempt's time left).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sends the request and reads the whole response.
    pub fn send(self) -> Result<Response, HttpError> {
        let url = Url::parse(&self.url)?;
        let mut headers: Vec<(String, Vec<u8>)> = self
            .headers
            .iter()
            .map(|(n, v)| (n.to_ascii_lowercase(), v.clone()))
            .collect();
        // The whole body is known: declare its length, so it is not sent chunked (which
        // many APIs refuse) and the host can refuse one over its cap before connecting.
        if !self.body.is_empty() && !headers.iter().any(|(n, _)| n == "content-length") {
            headers.push((
                "content-length".into(),
                self.body.len().to_string().into_bytes(),
            ));
        }
        let fields = Fields::from_list(&headers).map_err(|e| invalid(format!("headers: {e:?}")))?;
        let request = OutgoingRequest::new(fields);
        let scheme = match url.scheme.as_str() {
            "https" => Scheme::Https,
            "http" => Scheme::Http,
            other => Scheme::Other(other.to_string()),
        };
        let set = request
            .set_method(&self.method.to_wasi())
            .and(request.set_scheme(Some(&scheme)))
            .and(request.set_authority(Some(&url.authority)))
            .and(request.set_path_with_query(Some(&url.path_and_query)));
        set.map_err(|()| invalid(format!("URL `{}`", self.url)))?;
        let body = request
            .body()
            .map_err(|()| invalid("request body taken twice"))?;
        let options = self.timeout.map(|t| {
            let options = RequestOptions::new();
            let ns = u64::try_from(t.as_nanos()).unwrap_or(u64::MAX);
            // Each setter only fails for a value the host cannot represent.
            let _ = options.set_connect_timeout(Some(ns));
            let _ = options.set_first_byte_timeout(Some(ns));
            let _ = options.set_between_bytes_timeout(Some(ns));
            options
        });
        let future = outgoing_handler::handle(request, options).map_err(from_code)?;
        // A body the host stops taking (over its cap, or the request refused) closes the
        // stream: why is the response's error code, so that is read first.
        let closed = match write_body(body, &self.body) {
            Ok(()) => false,
            Err(WriteFailure::Closed) => true,
            Err(WriteFailure::Failed(e)) => return Err(e),
        };
        future.subscribe().block();
        let response = match future.get() {
            Some(Ok(Ok(response))) => response,
            Some(Ok(Err(code))) => return Err(from_code(code)),
            Some(Err(())) => return Err(invalid("response taken twice")),
            None => return Err(invalid("response not ready after waiting for it")),
        };
        if closed {
            return Err(stream_error(StreamError::Closed));
        }
        let status = response.status();
        let headers = response.headers().entries();
        let incoming = response
            .consume()
            .map_err(|()| invalid("response body taken twice"))?;
        let body = read_body(&incoming)?;
        drop(IncomingBody::finish(incoming));
        Ok(Response {
            status,
            headers,
            body,
        })
    }
}

impl Method {
    fn to_wasi(&self) -> WasiMethod {
        match self {
            Method::Get => WasiMethod::Get,
            Method::Head => WasiMethod::Head,
            Method::Post => WasiMethod::Post,
            Method::Put => WasiMethod::Put,
            Method::Patch => WasiMethod::Patch,
            Method::Delete => WasiMethod::Delete,
            Method::Options => WasiMethod::Options,
        }
    }
}

impl Response {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }

    /// The body decoded as JSON.
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, HttpError> {
        serde_json::from_slice(&self.body).map_err(|e| HttpError {
            code: "invalid-response".into(),
            message: format!("JSON body: {e}"),
        })
    }

    /// The body as text (invalid UTF-8 is replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// How long the server asked to wait before trying again: its `Retry-After` header,
    /// as seconds or an HTTP-date (a date in the past is zero); `None` without one or
    /// when it is neither. `v0_3::flow::snooze_when_busy` snoozes for it.
    pub fn retry_after(&self) -> Option<Duration> {
        crate::retry_after::parse(self.header("retry-after")?, std::time::SystemTime::now())
    }
}

/// How writing a request body failed.
enum WriteFailure {
    /// The host closed the stream: it stopped taking the body, and the response says why.
    Closed,
    /// Any other failure, with its code.
    Failed(HttpError),
}

fn write_body(body: OutgoingBody, bytes: &[u8]) -> Result<(), WriteFailure> {
    {
        let stream = body
            .write()
            .map_err(|()| WriteFailure::Failed(invalid("request body stream taken twice")))?;
        for chunk in bytes.chunks(WRITE_CHUNK) {
            stream
                .blocking_write_and_flush(chunk)
                .map_err(|e| match e {
                    StreamError::Closed => WriteFailure::Closed,
                    e => WriteFailure::Failed(stream_error(e)),
                })?;
        }
        // The stream must be dropped before the body is finished.
    }
    OutgoingBody::finish(body, None).map_err(|code| WriteFailure::Failed(from_code(code)))
}

fn read_body(body: &IncomingBody) -> Result<Vec<u8>, HttpError> {
    let stream = body
        .stream()
        .map_err(|()| invalid("response body stream taken twice"))?;
    let mut out = Vec::new();
    loop {
        match stream.blocking_read(READ_CHUNK) {
            Ok(chunk) => out.extend_from_slice(&chunk),
            Err(StreamError::Closed) => return Ok(out),
            Err(e) => return Err(stream_error(e)),
        }
    }
}

fn stream_error(e: StreamError) -> HttpError {
    match e {
        StreamError::Closed => HttpError {
            code: "connection-terminated".into(),
            message: "the stream closed".into(),
        },
        StreamError::LastOperationFailed(error) => {
            match crate::bindings::wasi::http::types::http_error_code(&error) {
                Some(code) => from_code(code),
                None => HttpError {
                    code: "internal-error".into(),
                    message: error.to_debug_string(),
                },
            }
        }
    }
}

/// The `error-code` case's name as the WIT spells it, and its details.
fn from_code(code: ErrorCode) -> HttpError {
    let name = match &code {
        ErrorCode::DnsTimeout => "DNS-timeout",
        ErrorCode::DnsError(_) => "DNS-error",
        ErrorCode::DestinationNotFound => "destination-not-found",
        ErrorCode::DestinationUnavailable => "destination-unavailable",
        ErrorCode::DestinationIpProhibited => "destination-IP-prohibited",
        ErrorCode::DestinationIpUnroutable => "destination-IP-unroutable",
        ErrorCode::ConnectionRefused => "connection-refused",
        ErrorCode::ConnectionTerminated => "connection-terminated",
        ErrorCode::ConnectionTimeout => "connection-timeout",
        ErrorCode::ConnectionReadTimeout => "connection-read-timeout",
        ErrorCode::ConnectionWriteTimeout => "connection-write-timeout",
        ErrorCode::ConnectionLimitReached => "connection-limit-reached",
        ErrorCode::TlsProtocolError => "TLS-protocol-error",
        ErrorCode::TlsCertificateError => "TLS-certificate-error",
        ErrorCode::TlsAlertReceived(_) => "TLS-alert-received",
        ErrorCode::HttpRequestDenied => "HTTP-request-denied",
        ErrorCode::HttpRequestLengthRequired => "HTTP-request-length-required",
        ErrorCode::HttpRequestBodySize(_) => "HTTP-request-body-size",
        ErrorCode::HttpRequestMethodInvalid => "HTTP-request-method-invalid",
        ErrorCode::HttpRequestUriInvalid => "HTTP-request-URI-invalid",
        ErrorCode::HttpRequestUriTooLong => "HTTP-request-URI-too-long",
        ErrorCode::HttpResponseIncomplete => "HTTP-response-incomplete",
        ErrorCode::HttpResponseBodySize(_) => "HTTP-response-body-size",
        ErrorCode::HttpResponseTimeout => "HTTP-response-timeout",
        ErrorCode::HttpProtocolError => "HTTP-protocol-error",
        ErrorCode::InternalError(_) => "internal-error",
        _ => "other",
    };
    HttpError {
        code: name.into(),
        message: format!("{code:?}"),
    }
}

/// The parts of an absolute `http(s)://` URL the request needs.
#[derive(Debug, PartialEq, Eq)]
struct Url {
    scheme: String,
    authority: String,
    path_and_query: String,
}

impl Url {
    fn parse(url: &str) -> Result<Url, HttpError> {
        let bad = |why: &str| invalid(format!("URL `{url}`: {why}"));
        let (scheme, rest) = url.split_once("://").ok_or_else(|| bad("no scheme"))?;
        let rest = rest.split('#').next().unwrap_or_default();
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        if authority.is_empty() {
            return Err(bad("no host"));
        }
        let path_and_query = match tail {
            "" => "/".to_string(),
            t if t.starts_with('?') => format!("/{t}"),
            t => t.to_string(),
        };
        Ok(Url {
            scheme: scheme.to_ascii_lowercase(),
            authority: authority.to_string(),
            path_and_query,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn urls_split_into_scheme_authority_and_path() {
        let u = url("https://api.example.com:8443/v1/x?y=1#frag");
        assert_eq!(u.scheme, "https");
        assert_eq!(u.authority, "api.example.com:8443");
        assert_eq!(u.path_and_query, "/v1/x?y=1");
        assert_eq!(url("HTTP://a.b").path_and_query, "/");
        assert_eq!(url("http://a.b?q=1").path_and_query, "/?q=1");
        assert_eq!(url("http://[::1]:80/p").authority, "[::1]:80");
        assert_eq!(Url::parse("a.b/c").unwrap_err().code, "invalid-request");
        assert!(Url::parse("https:///path").is_err());
    }

    #[test]
    fn errors_become_retries_naming_the_code() {
        let e = HttpError {
            code: "connection-timeout".into(),
            message: "ConnectionTimeout".into(),
        };
        let task: TaskError = e.into();
        assert!(task.is_retry());
        assert!(
            task.message().contains("connection-timeout"),
            "{}",
            task.message()
        );
    }
}
