//! The errors of one outbound request. Each [`EgressError`] variant maps onto exactly one
//! `wasi:http/types.error-code` (see [`EgressError::error_code`]); the sandbox translates
//! them one-to-one, webhooks log them. It also maps the failures of the libraries the
//! connector and the body wrappers drive (hyper, rustls) onto these variants. This module
//! only describes failures: it decides nothing and does no I/O.

use std::net::{IpAddr, SocketAddr};

use crate::deny::DenyRule;

/// Why the policy refused a request before any network activity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DenyReason {
    /// The URL's scheme is neither `http` nor `https`.
    #[error("scheme `{0}` is not supported (only http and https)")]
    UnsupportedScheme(String),
    /// No allow-list entry names this host (for this scheme).
    #[error("host `{host}` is not on the allow list for {scheme}")]
    HostNotListed {
        /// The URL's scheme, `http` or `https`.
        scheme: String,
        /// The destination host, normalised (lowercase, no trailing dot, no IPv6 brackets).
        host: String,
    },
    /// An entry names the host, but not on this port.
    #[error("port {port} of `{host}` is not on the allow list for {scheme}")]
    PortNotListed {
        /// The URL's scheme, `http` or `https`.
        scheme: String,
        /// The destination host, normalised (lowercase, no trailing dot, no IPv6 brackets).
        host: String,
        /// The URL's port (the scheme's default when it names none).
        port: u16,
    },
    /// The job type's list permits it but the tenant's bound (set by the operator) does not.
    #[error("`{scheme}://{host}:{port}` is outside the tenant's egress bound")]
    OutsideBound {
        /// The URL's scheme, `http` or `https`.
        scheme: String,
        /// The destination host, normalised (lowercase, no trailing dot, no IPv6 brackets).
        host: String,
        /// The URL's port (the scheme's default when it names none).
        port: u16,
    },
}

/// Which read deadline expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadPhase {
    /// Waiting for the response head after the request was sent.
    FirstByte,
    /// Waiting for the next chunk of the response body.
    BetweenBytes,
    /// The attempt's absolute deadline passed while the response was in flight.
    Deadline,
}

impl std::fmt::Display for ReadPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ReadPhase::FirstByte => "first byte",
            ReadPhase::BetweenBytes => "between bytes",
            ReadPhase::Deadline => "attempt deadline",
        })
    }
}

/// A failed outbound request. Display text names the destination and, for refusals,
/// the rule, so it can go straight into an attempt's log line.
#[derive(Debug, thiserror::Error)]
pub enum EgressError {
    /// `HTTP-request-denied`: the allow list (or the tenant bound) refused the URL.
    #[error("egress denied: {0}")]
    HttpRequestDenied(DenyReason),
    /// `destination-IP-prohibited`: every address of the destination is on the deny list.
    #[error("egress denied: `{host}` -> {addr} is prohibited ({rule})")]
    DestinationIpProhibited {
        /// The destination host, normalised (lowercase, no trailing dot, no IPv6 brackets).
        host: String,
        /// The refused address: the IP literal of the URL, or the first resolved address
        /// the deny list refused.
        addr: IpAddr,
        /// The deny-list rule that refused `addr`.
        rule: DenyRule,
    },
    /// `destination-IP-unroutable`: the network or host is unreachable.
    #[error("{addr} is unroutable: {detail}")]
    DestinationIpUnroutable {
        /// The last vetted address a connection was tried on.
        addr: SocketAddr,
        /// The operating system's connect error.
        detail: String,
    },
    /// `DNS-timeout`.
    #[error("DNS lookup of `{host}` timed out")]
    DnsTimeout {
        /// The name being resolved (normalised).
        host: String,
    },
    /// `DNS-error`: the name did not resolve (or resolved to nothing).
    #[error("DNS lookup of `{host}` failed: {detail}")]
    DnsError {
        /// The name being resolved (normalised).
        host: String,
        /// The resolver's error, or `no addresses`.
        detail: String,
    },
    /// `connection-refused`.
    #[error("connection to {addr} refused")]
    ConnectionRefused {
        /// The last vetted address a connection was tried on (refused, reset or not
        /// permitted).
        addr: SocketAddr,
    },
    /// `connection-timeout`: connect/TLS/handshake did not finish in time, or no time was left.
    #[error("connecting to `{host}` timed out")]
    ConnectionTimeout {
        /// The destination host, normalised (lowercase, no trailing dot, no IPv6 brackets).
        host: String,
    },
    /// `connection-read-timeout`: first byte, between bytes, or the attempt deadline.
    #[error("reading from `{host}` timed out ({phase})")]
    ConnectionReadTimeout {
        /// The destination host, normalised (lowercase, no trailing dot, no IPv6 brackets).
        host: String,
        /// Which deadline expired.
        phase: ReadPhase,
    },
    /// `connection-terminated`: the peer closed or reset the connection mid-exchange.
    #[error("connection to `{host}` terminated: {detail}")]
    ConnectionTerminated {
        /// The destination host, normalised (lowercase, no trailing dot, no IPv6 brackets).
        host: String,
        /// hyper's or the TLS library's description of the failure.
        detail: String,
    },
    /// `HTTP-request-URI-invalid`.
    #[error("invalid request URI: {0}")]
    HttpRequestUriInvalid(String),
    /// `HTTP-request-body-size`: the request body exceeds the grant's cap (bytes).
    #[error("request body exceeds the {cap}-byte limit")]
    HttpRequestBodySize {
        /// The grant's `max_request_body_bytes`, exceeded by the declared
        /// `Content-Length`, the body's size hint, or the bytes actually sent.
        cap: u64,
    },
    /// `HTTP-response-body-size`: the response body exceeded this cap (bytes).
    #[error("response body exceeds the {0}-byte limit")]
    HttpResponseBodySize(u64),
    /// `TLS-certificate-error`: the server's certificate is not valid for the URL's host.
    #[error("TLS certificate of `{host}` rejected: {detail}")]
    TlsCertificateError {
        /// The server name checked (the URL's host, normalised).
        host: String,
        /// rustls's reason for rejecting the certificate.
        detail: String,
    },
    /// `TLS-protocol-error`: the TLS handshake or session failed for a reason other than
    /// the certificate.
    #[error("TLS with `{host}` failed: {detail}")]
    TlsProtocolError {
        /// The destination host, normalised (lowercase, no trailing dot, no IPv6 brackets).
        host: String,
        /// rustls's description of the failure.
        detail: String,
    },
    /// `HTTP-protocol-error`: the peer spoke malformed HTTP/1.
    #[error("HTTP protocol error with `{host}`: {detail}")]
    HttpProtocolError {
        /// The destination host, normalised (lowercase, no trailing dot, no IPv6 brackets).
        host: String,
        /// hyper's description of what was malformed.
        detail: String,
    },
    /// `internal-error`: a failure of the host, not of the destination (the message says
    /// what).
    #[error("internal egress error: {0}")]
    InternalError(String),
}

impl EgressError {
    /// The metrics label: `denied` (the policy or a cap refused it), `timeout`, or `error`.
    pub fn outcome(&self) -> &'static str {
        match self {
            EgressError::HttpRequestDenied(_)
            | EgressError::DestinationIpProhibited { .. }
            | EgressError::HttpRequestBodySize { .. }
            | EgressError::HttpResponseBodySize(_) => "denied",
            EgressError::DnsTimeout { .. }
            | EgressError::ConnectionTimeout { .. }
            | EgressError::ConnectionReadTimeout { .. } => "timeout",
            _ => "error",
        }
    }

    /// The name of the `wasi:http/types.error-code` case this variant becomes.
    pub fn error_code(&self) -> &'static str {
        match self {
            EgressError::HttpRequestDenied(_) => "HTTP-request-denied",
            EgressError::DestinationIpProhibited { .. } => "destination-IP-prohibited",
            EgressError::DestinationIpUnroutable { .. } => "destination-IP-unroutable",
            EgressError::DnsTimeout { .. } => "DNS-timeout",
            EgressError::DnsError { .. } => "DNS-error",
            EgressError::ConnectionRefused { .. } => "connection-refused",
            EgressError::ConnectionTimeout { .. } => "connection-timeout",
            EgressError::ConnectionReadTimeout { .. } => "connection-read-timeout",
            EgressError::ConnectionTerminated { .. } => "connection-terminated",
            EgressError::HttpRequestUriInvalid(_) => "HTTP-request-URI-invalid",
            EgressError::HttpRequestBodySize { .. } => "HTTP-request-body-size",
            EgressError::HttpResponseBodySize(_) => "HTTP-response-body-size",
            EgressError::TlsCertificateError { .. } => "TLS-certificate-error",
            EgressError::TlsProtocolError { .. } => "TLS-protocol-error",
            EgressError::HttpProtocolError { .. } => "HTTP-protocol-error",
            EgressError::InternalError(_) => "internal-error",
        }
    }
}

/// Maps a failed TLS handshake: a rejected certificate, any other TLS failure, or the
/// peer hanging up mid-handshake.
pub(crate) fn map_tls_error(host: &str, e: std::io::Error) -> EgressError {
    let detail = e.to_string();
    let host = host.to_string();
    match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        Some(rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented) => {
            EgressError::TlsCertificateError { host, detail }
        }
        Some(_) => EgressError::TlsProtocolError { host, detail },
        None if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            EgressError::ConnectionTerminated { host, detail }
        }
        None => EgressError::TlsProtocolError { host, detail },
    }
}

/// Maps a hyper error; `phase` says which read timeout a hyper timeout stands for.
pub(crate) fn map_hyper_error(host: &str, e: &hyper::Error, phase: ReadPhase) -> EgressError {
    let host = host.to_string();
    let detail = e.to_string();
    if e.is_timeout() {
        EgressError::ConnectionReadTimeout { host, phase }
    } else if e.is_parse() || e.is_parse_status() {
        EgressError::HttpProtocolError { host, detail }
    } else if e.is_incomplete_message()
        || e.is_closed()
        || e.is_canceled()
        || e.is_body_write_aborted()
        || std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>())
    {
        EgressError::ConnectionTerminated { host, detail }
    } else {
        EgressError::HttpProtocolError { host, detail }
    }
}
