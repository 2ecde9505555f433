//! The vetted connector: the one place Sluice opens an outbound HTTP connection.
//!
//! [`Connector::send`] checks the URL against the grant's allow list (and the tenant's
//! bound), resolves the name once, drops every address the deny list refuses, connects
//! only to the vetted socket addresses, does TLS with the URL's host as the server name,
//! and speaks HTTP/1.1 through hyper. It never follows redirects, never reads proxy
//! environment variables and never pools connections across requests. It knows nothing
//! of wasmtime, tenants' storage or metrics: callers hand it a [`Grant`].

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, HOST};
use http::{HeaderValue, Request, Response, Uri};
use http_body::Body;
use hyper_util::rt::TokioIo;
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::time::{Instant, sleep_until, timeout, timeout_at};
use tokio_rustls::TlsConnector;

use crate::allow::{AllowList, Scheme, normalise_host};
use crate::body::{BoxError, CappedRequestBody, ResponseBody};
use crate::deny::NetworkPolicy;
use crate::error::{DenyReason, EgressError, ReadPhase, map_hyper_error, map_tls_error};
use crate::limits::{Limits, RequestTimeouts, clamp};
use crate::resolve::{Resolver, SystemResolver};
use crate::tls::{TlsConfigError, client_config};

/// The future that drives a connection after [`Connector::send`] returned the response
/// head. It must be polled (spawned) for the response body to make progress; it ends
/// when the exchange is complete, the body failed or was dropped, or the deadline passed.
pub type IoFuture = Pin<Box<dyn Future<Output = Result<(), EgressError>> + Send>>;

/// What one caller (a job type's attempt, a webhook delivery) may reach, and its caps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grant {
    /// The destinations permitted (empty = nothing).
    pub allow: AllowList,
    /// The tenant's bound set by the operator; when present a destination must be in both.
    pub bound: Option<AllowList>,
    /// The timeouts and body caps of each request sent under this grant.
    pub limits: Limits,
}

impl Grant {
    /// A grant of `allow` with the default [`Limits`] and no bound.
    pub fn new(allow: AllowList) -> Self {
        Self {
            allow,
            bound: None,
            limits: Limits::default(),
        }
    }
}

/// How to build a [`Connector`].
pub struct ConnectorConfig {
    /// Networks the operator opened despite the deny list.
    pub networks: NetworkPolicy,
    /// Where names are resolved (the system resolver by default).
    pub resolver: Arc<dyn Resolver>,
    /// Root CAs trusted in addition to webpki-roots, as PEM (empty = none).
    pub extra_root_certs_pem: Vec<u8>,
}

impl Default for ConnectorConfig {
    fn default() -> Self {
        Self {
            networks: NetworkPolicy::default(),
            resolver: Arc::new(SystemResolver),
            extra_root_certs_pem: Vec::new(),
        }
    }
}

/// The vetted outbound HTTP connector. Cheap to clone; share one per process.
#[derive(Clone)]
pub struct Connector {
    networks: Arc<NetworkPolicy>,
    resolver: Arc<dyn Resolver>,
    tls: TlsConnector,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("networks", &self.networks)
            .finish_non_exhaustive()
    }
}

trait Io: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Io for T {}

/// The destination of a request, taken from its absolute URI.
struct Target {
    scheme: Scheme,
    /// Normalised: lowercase, no trailing dot, no IPv6 brackets.
    host: String,
    ip: Option<IpAddr>,
    port: u16,
    /// The URL's authority as written, for the `Host` header.
    authority: String,
}

fn target(uri: &Uri) -> Result<Target, EgressError> {
    let invalid = |why: &str| EgressError::HttpRequestUriInvalid(format!("`{uri}`: {why}"));
    let scheme_str = uri.scheme_str().ok_or_else(|| invalid("no scheme"))?;
    let scheme = Scheme::parse(scheme_str).ok_or_else(|| {
        EgressError::HttpRequestDenied(DenyReason::UnsupportedScheme(scheme_str.to_string()))
    })?;
    let authority = uri.authority().ok_or_else(|| invalid("no authority"))?;
    if authority.as_str().contains('@') {
        return Err(invalid("userinfo is not allowed"));
    }
    let host = normalise_host(authority.host());
    if host.is_empty() {
        return Err(invalid("empty host"));
    }
    let port = match authority.port() {
        None => scheme.default_port(),
        Some(p) => match p.as_u16() {
            0 => return Err(invalid("port 0")),
            n => n,
        },
    };
    Ok(Target {
        scheme,
        ip: host.parse().ok(),
        host,
        port,
        authority: authority.as_str().to_string(),
    })
}

impl Connector {
    /// Builds a connector; fails only if the extra root CAs are unusable.
    pub fn new(config: ConnectorConfig) -> Result<Self, TlsConfigError> {
        Ok(Self {
            networks: Arc::new(config.networks),
            resolver: config.resolver,
            tls: TlsConnector::from(client_config(&config.extra_root_certs_pem)?),
        })
    }

    /// The operator-opened networks this connector honours.
    pub fn networks(&self) -> &NetworkPolicy {
        &self.networks
    }

    /// Sends `request` (absolute URI: `http(s)://authority/path`) under `grant`.
    ///
    /// `deadline` is the end of the caller's attempt; `timeouts` are what the guest asked
    /// for. Every timeout is `min(guest, grant cap, deadline - now)`. Returns the response
    /// head with a capped body, and the [`IoFuture`] that drives the connection (the shape
    /// of wasmtime-wasi-http's `send_request`). 3xx responses are returned as they are.
    pub async fn send<B>(
        &self,
        request: Request<B>,
        grant: &Grant,
        deadline: Instant,
        timeouts: RequestTimeouts,
    ) -> Result<(Response<ResponseBody>, IoFuture), EgressError>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        let t = target(request.uri())?;
        let limits = &grant.limits;
        self.authorise(&t, grant)?;

        let cap = limits.max_request_body_bytes;
        let declared = request
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|n| n > cap) || request.body().size_hint().lower() > cap {
            return Err(EgressError::HttpRequestBodySize { cap });
        }

        let now = Instant::now();
        if deadline <= now {
            return Err(EgressError::ConnectionTimeout { host: t.host });
        }
        let addrs = self.vetted_addrs(&t, limits, deadline).await?;

        let connect = clamp(
            timeouts.connect,
            limits.connect_timeout,
            deadline,
            Instant::now(),
        );
        if connect.is_zero() {
            return Err(EgressError::ConnectionTimeout { host: t.host });
        }
        let connect_deadline = Instant::now() + connect;
        let tcp = connect_any(&addrs, connect_deadline, &t.host).await?;
        let _ = tcp.set_nodelay(true);
        let io: Box<dyn Io> = match t.scheme {
            Scheme::Http => Box::new(tcp),
            Scheme::Https => Box::new(self.tls_handshake(&t, tcp, connect_deadline).await?),
        };
        let (mut sender, conn) = timeout_at(
            connect_deadline,
            hyper::client::conn::http1::Builder::new().handshake(TokioIo::new(io)),
        )
        .await
        .map_err(|_| EgressError::ConnectionTimeout {
            host: t.host.clone(),
        })?
        .map_err(|e| map_hyper_error(&t.host, &e, ReadPhase::FirstByte))?;

        // Origin-form URI (no scheme/authority: we are not talking to a proxy) and a Host
        // header equal to the URL's authority.
        let (mut parts, body) = request.into_parts();
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        parts.uri = Uri::builder()
            .path_and_query(path)
            .build()
            .map_err(|e| EgressError::HttpRequestUriInvalid(e.to_string()))?;
        let host_header = HeaderValue::from_str(&t.authority)
            .map_err(|e| EgressError::HttpRequestUriInvalid(e.to_string()))?;
        parts.headers.insert(HOST, host_header);
        let exceeded = Arc::new(AtomicBool::new(false));
        let body = CappedRequestBody::new(body, cap, exceeded.clone());
        let req = Request::from_parts(parts, body);

        let first_byte = clamp(
            timeouts.first_byte,
            limits.first_byte_timeout,
            deadline,
            Instant::now(),
        );
        let first_byte_deadline = Instant::now() + first_byte;
        let mut conn = Box::pin(conn);
        let mut conn_done = false;
        let send = sender.send_request(req);
        tokio::pin!(send);
        let result = loop {
            tokio::select! {
                r = &mut send => break r,
                r = conn.as_mut(), if !conn_done => {
                    conn_done = true;
                    if let Err(e) = r {
                        break Err(e);
                    }
                }
                _ = sleep_until(first_byte_deadline) => {
                    return Err(EgressError::ConnectionReadTimeout {
                        host: t.host,
                        phase: ReadPhase::FirstByte,
                    });
                }
            }
        };
        drop(sender);
        if exceeded.load(Ordering::SeqCst) {
            return Err(EgressError::HttpRequestBodySize { cap });
        }
        let response = result.map_err(|e| map_hyper_error(&t.host, &e, ReadPhase::FirstByte))?;
        // A body declared larger than the cap is refused with the head, before any of it
        // is read: the caller then sees the size error on the response itself (a cap hit
        // while streaming an undeclared length surfaces from the body instead; a guest
        // reads its code with `http-error-code`, docs/egress.md).
        let declared = response
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limits.max_response_body_bytes) {
            return Err(EgressError::HttpResponseBodySize(
                limits.max_response_body_bytes,
            ));
        }

        let between = clamp(
            timeouts.between_bytes,
            limits.between_bytes_timeout,
            deadline,
            Instant::now(),
        );
        let (abort_tx, abort_rx) = oneshot::channel();
        let host = t.host.clone();
        let response = response.map(|incoming| {
            ResponseBody::new(
                incoming,
                t.host,
                limits.max_response_body_bytes,
                between,
                deadline,
                abort_tx,
            )
        });
        let conn = (!conn_done).then_some(conn);
        let io: IoFuture = Box::pin(async move {
            let Some(mut conn) = conn else {
                return Ok(());
            };
            tokio::select! {
                r = conn.as_mut() => r.map_err(|e| map_hyper_error(&host, &e, ReadPhase::BetweenBytes)),
                Ok(()) = abort_rx => Ok(()),
                _ = sleep_until(deadline) => Err(EgressError::ConnectionReadTimeout {
                    host,
                    phase: ReadPhase::Deadline,
                }),
            }
        });
        Ok((response, io))
    }

    /// Allow list, tenant bound, and the deny list for IP-literal hosts.
    fn authorise(&self, t: &Target, grant: &Grant) -> Result<(), EgressError> {
        if let Some(ip) = t.ip {
            self.networks
                .check(ip)
                .map_err(|rule| EgressError::DestinationIpProhibited {
                    host: t.host.clone(),
                    addr: ip,
                    rule,
                })?;
        }
        let scheme = t.scheme.as_str();
        grant
            .allow
            .check(scheme, &t.host, t.port)
            .map_err(EgressError::HttpRequestDenied)?;
        if let Some(bound) = &grant.bound
            && !bound.permits(scheme, &t.host, t.port)
        {
            return Err(EgressError::HttpRequestDenied(DenyReason::OutsideBound {
                scheme: scheme.to_string(),
                host: t.host.clone(),
                port: t.port,
            }));
        }
        Ok(())
    }

    /// Resolves once and keeps only the addresses the deny list (with the operator's
    /// exceptions) lets through.
    async fn vetted_addrs(
        &self,
        t: &Target,
        limits: &Limits,
        deadline: Instant,
    ) -> Result<Vec<SocketAddr>, EgressError> {
        let resolved = match t.ip {
            Some(ip) => vec![SocketAddr::new(ip, t.port)],
            None => {
                let dns = clamp(None, limits.dns_timeout, deadline, Instant::now());
                let dns_timeout = || EgressError::DnsTimeout {
                    host: t.host.clone(),
                };
                if dns.is_zero() {
                    return Err(dns_timeout());
                }
                let addrs = timeout(dns, self.resolver.lookup(&t.host, t.port))
                    .await
                    .map_err(|_| dns_timeout())?
                    .map_err(|e| EgressError::DnsError {
                        host: t.host.clone(),
                        detail: e.to_string(),
                    })?;
                if addrs.is_empty() {
                    return Err(EgressError::DnsError {
                        host: t.host.clone(),
                        detail: "no addresses".into(),
                    });
                }
                addrs
            }
        };
        let mut first_refusal = None;
        let mut vetted = Vec::with_capacity(resolved.len());
        for addr in resolved {
            match self.networks.check(addr.ip()) {
                Ok(()) => vetted.push(addr),
                Err(rule) => {
                    tracing::debug!(host = %t.host, %addr, %rule, "egress address refused");
                    first_refusal.get_or_insert((addr.ip(), rule));
                }
            }
        }
        match (vetted.is_empty(), first_refusal) {
            (true, Some((addr, rule))) => Err(EgressError::DestinationIpProhibited {
                host: t.host.clone(),
                addr,
                rule,
            }),
            _ => Ok(vetted),
        }
    }

    async fn tls_handshake(
        &self,
        t: &Target,
        tcp: TcpStream,
        connect_deadline: Instant,
    ) -> Result<tokio_rustls::client::TlsStream<TcpStream>, EgressError> {
        let name = match t.ip {
            Some(ip) => ServerName::IpAddress(ip.into()),
            None => ServerName::try_from(t.host.clone()).map_err(|e| {
                EgressError::HttpRequestUriInvalid(format!(
                    "`{}` is not a TLS server name: {e}",
                    t.host
                ))
            })?,
        };
        timeout_at(connect_deadline, self.tls.connect(name, tcp))
            .await
            .map_err(|_| EgressError::ConnectionTimeout {
                host: t.host.clone(),
            })?
            .map_err(|e| map_tls_error(&t.host, e))
    }
}

/// Tries each vetted address in turn within the connect deadline.
async fn connect_any(
    addrs: &[SocketAddr],
    connect_deadline: Instant,
    host: &str,
) -> Result<TcpStream, EgressError> {
    let mut last = None;
    for addr in addrs {
        match timeout_at(connect_deadline, TcpStream::connect(addr)).await {
            Err(_) => {
                return Err(EgressError::ConnectionTimeout {
                    host: host.to_string(),
                });
            }
            Ok(Ok(tcp)) => return Ok(tcp),
            Ok(Err(e)) => {
                tracing::debug!(%host, %addr, error = %e, "egress connect failed");
                last = Some((*addr, e));
            }
        }
    }
    let Some((addr, e)) = last else {
        return Err(EgressError::InternalError(
            "no address to connect to".into(),
        ));
    };
    use std::io::ErrorKind::*;
    Err(match e.kind() {
        ConnectionRefused | ConnectionReset | PermissionDenied => {
            EgressError::ConnectionRefused { addr }
        }
        TimedOut => EgressError::ConnectionTimeout {
            host: host.to_string(),
        },
        _ => EgressError::DestinationIpUnroutable {
            addr,
            detail: e.to_string(),
        },
    })
}
