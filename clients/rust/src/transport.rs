//! The HTTP plumbing under the generated operations: [`Api`] (the base URL, the token, the
//! tenant header and a `reqwest` client with rustls over ring and the system's roots), how a
//! request's URL is built ([`Call`]: percent-encoded path segments, query pairs), and how an
//! answer becomes a value or an [`Error`] (the API's error body, `Retry-After`).
//!
//! Owns: everything that touches `reqwest`. Must not: know any route or schema (the
//! generated layer does); the one exception is the error body, the API's contract.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, RETRY_AFTER};
use reqwest::{Method, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::Error;
use crate::generated::{ErrorBody, ErrorCode};

/// The header an admin token names the tenant it acts for with.
pub const TENANT_HEADER: &str = "X-Sluice-Tenant";

/// The longest one request may take, a `wait` chunk (at most 60 s) included.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(90);

const USER_AGENT: &str = concat!("sluice-client-rust/", env!("CARGO_PKG_VERSION"));

/// The low-level API: one method per operation of the OpenAPI document (generated, in
/// `generated/`), each one HTTP request. Cheap to clone (the connection pool is shared).
#[derive(Clone, Debug)]
pub struct Api {
    http: reqwest::Client,
    base: String,
    token: String,
    tenant: Option<String>,
    request_timeout: Duration,
}

impl Api {
    /// An API at `base_url` (`http://127.0.0.1:8080`, a path prefix is kept) acting with
    /// `token`, over a new HTTP client.
    pub fn new(base_url: &str, token: &str) -> Result<Self, Error> {
        Self::with_http_client(default_http_client()?, base_url, token)
    }

    /// The same over `http`, a `reqwest` client of your own (proxies, roots, pools).
    pub fn with_http_client(
        http: reqwest::Client,
        base_url: &str,
        token: &str,
    ) -> Result<Self, Error> {
        let parsed = Url::parse(base_url)
            .map_err(|e| Error::Setup(format!("invalid base URL {base_url:?}: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(Error::Setup(format!(
                "invalid base URL {base_url:?}: use http:// or https://"
            )));
        }
        Ok(Api {
            http,
            base: parsed.as_str().trim_end_matches('/').to_owned(),
            token: token.to_owned(),
            tenant: None,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        })
    }

    /// Acts for `tenant` (the `X-Sluice-Tenant` header; only admin tokens may name
    /// another tenant than their own).
    pub fn with_tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = Some(tenant.into());
        self
    }

    /// The longest one request may take (default 90 s; keep it above 60 s, the longest
    /// chunk of [`crate::Client::wait`]).
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The base URL, without a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// The tenant named in `X-Sluice-Tenant`, if any.
    pub fn tenant(&self) -> Option<&str> {
        self.tenant.as_deref()
    }

    /// Sends `call` and returns the answer when its status is 2xx, else the API's error.
    pub(crate) async fn send(&self, call: Call) -> Result<Answer, Error> {
        let url = call.url(&self.base)?;
        let mut request = self
            .http
            .request(call.method, url)
            .timeout(self.request_timeout)
            .header(ACCEPT, "application/json")
            .bearer_auth(&self.token);
        if let Some(tenant) = &self.tenant {
            request = request.header(TENANT_HEADER, tenant);
        }
        for (name, value) in &call.headers {
            request = request.header(*name, value);
        }
        request = match call.body {
            Body::Empty => request,
            Body::Json(bytes) => request.header(CONTENT_TYPE, "application/json").body(bytes),
            Body::Bytes {
                content_type,
                bytes,
            } => request.header(CONTENT_TYPE, content_type).body(bytes),
        };
        let response = request.send().await.map_err(Error::Transport)?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.bytes().await.map_err(Error::Transport)?.to_vec();
        if (200..300).contains(&status) {
            Ok(Answer { status, body })
        } else {
            Err(api_error(status, &headers, &body))
        }
    }
}

/// The HTTP client [`Api::new`] uses: rustls with ring, the platform's trust roots, a
/// 10 s connect timeout.
pub fn default_http_client() -> Result<reqwest::Client, Error> {
    use rustls_platform_verifier::BuilderVerifierExt;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|builder| builder.with_platform_verifier())
        .map_err(|e| Error::Setup(format!("TLS setup: {e}")))?
        .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .connect_timeout(Duration::from_secs(10))
        .user_agent(USER_AGENT)
        .build()
        .map_err(|e| Error::Setup(format!("HTTP client setup: {e}")))
}

/// The typed error of a non-2xx answer: the API's `{"error": {"code", "message"}}`, or
/// for anything else (a proxy's page) an empty `Other` code and the start of the body.
pub(crate) fn api_error(status: u16, headers: &HeaderMap, body: &[u8]) -> Error {
    let retry_after = headers
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let (code, message) = match serde_json::from_slice::<ErrorBody>(body) {
        Ok(parsed) => (parsed.error.code, parsed.error.message),
        Err(_) => (
            ErrorCode::Other(String::new()),
            String::from_utf8_lossy(&body[..body.len().min(500)]).into_owned(),
        ),
    };
    Error::Api {
        status,
        code,
        message,
        retry_after,
    }
}

/// A 2xx answer: its status and body.
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as JSON of type `T`.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, Error> {
        serde_json::from_slice(&self.body).map_err(|e| Error::Decode {
            status: self.status,
            reason: format!(
                "{e} in {}",
                String::from_utf8_lossy(&self.body[..self.body.len().min(300)])
            ),
        })
    }

    /// The body as JSON of type `T`, with the status (for operations with several).
    pub fn reply<T: DeserializeOwned>(&self) -> Result<Reply<T>, Error> {
        Ok(Reply {
            status: self.status,
            body: self.json()?,
        })
    }

    /// The body as text (operations answering `text/*`).
    #[allow(dead_code)] // used when the document has such an operation
    pub fn text(&self) -> Result<String, Error> {
        Ok(String::from_utf8_lossy(&self.body).into_owned())
    }
}

/// The answer of an operation whose document lists several success statuses (e.g.
/// enqueue: 201 created, 200 an existing job for its idempotency key).
#[derive(Clone, Debug, PartialEq)]
pub struct Reply<T> {
    /// The HTTP status.
    pub status: u16,
    /// The decoded body.
    pub body: T,
}

/// A request body.
#[derive(Debug)]
pub(crate) enum Body {
    Empty,
    Json(Vec<u8>),
    Bytes {
        content_type: &'static str,
        bytes: Vec<u8>,
    },
}

/// One request of a generated operation: method, path (segments already encoded), query.
#[derive(Debug)]
pub(crate) struct Call {
    method: Method,
    path: String,
    query: Vec<(&'static str, String)>,
    headers: Vec<(&'static str, String)>,
    body: Body,
}

impl Call {
    pub fn new(method: Method, path: String) -> Self {
        Call {
            method,
            path,
            query: Vec::new(),
            headers: Vec::new(),
            body: Body::Empty,
        }
    }

    /// Adds `name=value` (every item of a list, repeated) when `value` is given.
    pub fn query<V: QueryValue + ?Sized>(&mut self, name: &'static str, value: Option<&V>) {
        if let Some(value) = value {
            value.push_pairs(name, &mut self.query);
        }
    }

    /// A header parameter, when given.
    #[allow(dead_code)] // used when the document has header parameters
    pub fn header(&mut self, name: &'static str, value: Option<&str>) {
        if let Some(value) = value {
            self.headers.push((name, value.to_owned()));
        }
    }

    /// A JSON body.
    pub fn json<T: Serialize + ?Sized>(&mut self, body: &T) -> Result<(), Error> {
        let bytes =
            serde_json::to_vec(body).map_err(|e| Error::Setup(format!("request body: {e}")))?;
        self.body = Body::Json(bytes);
        Ok(())
    }

    /// A raw body of `content_type`.
    #[allow(dead_code)] // used when the document has such an operation
    pub fn bytes(&mut self, content_type: &'static str, bytes: Vec<u8>) {
        self.body = Body::Bytes {
            content_type,
            bytes,
        };
    }

    /// The full URL of this call under `base`.
    pub fn url(&self, base: &str) -> Result<Url, Error> {
        let mut url = Url::parse(&format!("{base}{}", self.path))
            .map_err(|e| Error::Setup(format!("invalid URL for {}: {e}", self.path)))?;
        if !self.query.is_empty() {
            let mut pairs = url.query_pairs_mut();
            for (name, value) in &self.query {
                pairs.append_pair(name, value);
            }
        }
        Ok(url)
    }
}

/// One path segment, percent-encoded (everything but RFC 3986's unreserved characters).
pub(crate) fn segment(value: &impl std::fmt::Display) -> String {
    let mut out = String::new();
    for byte in value.to_string().bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// How a value is written in a query string.
pub trait QueryValue {
    /// Appends `name=<value>` pairs (one per item for a list).
    fn push_pairs(&self, name: &'static str, pairs: &mut Vec<(&'static str, String)>);
}

macro_rules! display_query_value {
    ($($t:ty),*) => {$(
        impl QueryValue for $t {
            fn push_pairs(&self, name: &'static str, pairs: &mut Vec<(&'static str, String)>) {
                pairs.push((name, self.to_string()));
            }
        }
    )*};
}

display_query_value!(str, String, bool, i32, i64, u32, u64, f64);

impl QueryValue for DateTime<Utc> {
    fn push_pairs(&self, name: &'static str, pairs: &mut Vec<(&'static str, String)>) {
        pairs.push((name, self.to_rfc3339_opts(SecondsFormat::AutoSi, true)));
    }
}

impl<T: QueryValue> QueryValue for Vec<T> {
    fn push_pairs(&self, name: &'static str, pairs: &mut Vec<(&'static str, String)>) {
        for item in self {
            item.push_pairs(name, pairs);
        }
    }
}

/// `Option<Option<T>>` fields: absent (`None`), `null` (`Some(None)`) or a value, for
/// request fields where absent and null differ (a PATCH keeps an absent field, lifts a
/// null one).
pub mod double_option {
    use serde::{Deserialize, Deserializer};

    /// Reads a present field: `null` is `Some(None)` (an absent one is `None` by
    /// `#[serde(default)]`).
    pub fn deserialize<'de, T, D>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
    where
        T: Deserialize<'de>,
        D: Deserializer<'de>,
    {
        Option::<T>::deserialize(deserializer).map(Some)
    }
}
