//! Test fixtures: a tiny HTTP/1.1 server on 127.0.0.1 that records what it saw, and a
//! test CA generated at run time. Loopback only; no traffic leaves the machine.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair,
};
use rustls::ServerConfig;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// What the server does once it has read a request head.
#[derive(Clone)]
pub enum Reply {
    /// Read the body, answer, close.
    Respond {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// Read the body, wait this long (or until the client closes), then answer.
    Delay(Duration),
    /// Send a chunked head and `sent` body bytes, then stall until the client closes.
    Stall { sent: usize },
    /// Never answer; read until the client closes.
    Hold,
}

impl Reply {
    pub fn ok(body: &str) -> Self {
        Reply::Respond {
            status: 200,
            headers: vec![],
            body: body.as_bytes().to_vec(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

pub struct TestServer {
    pub addr: SocketAddr,
    accepts: Arc<AtomicUsize>,
    /// Requests whose head was read (the index into the script of the next one).
    served: Arc<AtomicUsize>,
    requests: Arc<Mutex<Vec<Recorded>>>,
    /// Notified when the client closed a connection the server was still waiting on.
    pub client_closed: Arc<Notify>,
}

impl TestServer {
    pub async fn start(reply: Reply) -> Self {
        Self::start_inner(vec![reply], None).await
    }

    /// Answers the n-th request with `script[n]`, and every later one with its last
    /// (the webhook tests' receivers; the connector's own tests need one reply).
    #[allow(dead_code)]
    pub async fn start_script(script: Vec<Reply>) -> Self {
        assert!(!script.is_empty(), "a script needs at least one reply");
        Self::start_inner(script, None).await
    }

    pub async fn start_tls(reply: Reply, tls: Arc<ServerConfig>) -> Self {
        Self::start_inner(vec![reply], Some(tokio_rustls::TlsAcceptor::from(tls))).await
    }

    async fn start_inner(script: Vec<Reply>, tls: Option<tokio_rustls::TlsAcceptor>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = TestServer {
            addr: listener.local_addr().unwrap(),
            accepts: Arc::default(),
            served: Arc::default(),
            requests: Arc::default(),
            client_closed: Arc::default(),
        };
        let (accepts, served, requests, closed) = (
            server.accepts.clone(),
            server.served.clone(),
            server.requests.clone(),
            server.client_closed.clone(),
        );
        let script = Arc::new(script);
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                accepts.fetch_add(1, Ordering::SeqCst);
                let (script, served, requests, closed, tls) = (
                    script.clone(),
                    served.clone(),
                    requests.clone(),
                    closed.clone(),
                    tls.clone(),
                );
                tokio::spawn(async move {
                    let served = Served { script, served };
                    match tls {
                        None => serve(tcp, served, requests, closed).await,
                        Some(acceptor) => {
                            if let Ok(s) = acceptor.accept(tcp).await {
                                serve(s, served, requests, closed).await;
                            }
                        }
                    }
                });
            }
        });
        server
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn accepts(&self) -> usize {
        self.accepts.load(Ordering::SeqCst)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

async fn read_until_eof<S: AsyncRead + Unpin>(s: &mut S) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = s.read(&mut buf).await {
        if n == 0 {
            break;
        }
    }
}

/// The script and the count of requests read so far, shared by connections.
struct Served {
    script: Arc<Vec<Reply>>,
    served: Arc<AtomicUsize>,
}

impl Served {
    /// The reply for the request whose head was just read.
    fn next(&self) -> Reply {
        let n = self.served.fetch_add(1, Ordering::SeqCst);
        self.script[n.min(self.script.len() - 1)].clone()
    }
}

async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    mut s: S,
    served: Served,
    requests: Arc<Mutex<Vec<Recorded>>>,
    closed: Arc<Notify>,
) {
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let mut chunk = [0u8; 4096];
        match s.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let reply = served.next();
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split(' ');
    let method = first.next().unwrap_or("").to_string();
    let target = first.next().unwrap_or("").to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut rec = Recorded {
        method,
        target,
        headers,
        body: Vec::new(),
    };
    if matches!(reply, Reply::Hold) {
        requests.lock().unwrap().push(rec);
        read_until_eof(&mut s).await;
        closed.notify_one();
        return;
    }
    let mut rest = buf[head_end..].to_vec();
    if let Some(len) = rec
        .header("content-length")
        .and_then(|v| v.parse::<usize>().ok())
    {
        while rest.len() < len {
            let mut chunk = [0u8; 4096];
            match s.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => rest.extend_from_slice(&chunk[..n]),
            }
        }
        rec.body = rest[..len].to_vec();
    }
    requests.lock().unwrap().push(rec);
    let (status, headers, body) = match reply {
        Reply::Respond {
            status,
            headers,
            body,
        } => (status, headers, body),
        Reply::Delay(d) => {
            let mut probe = [0u8; 1];
            tokio::select! {
                _ = tokio::time::sleep(d) => (200, vec![], b"late".to_vec()),
                _ = s.read(&mut probe) => { closed.notify_one(); return; }
            }
        }
        Reply::Stall { sent } => {
            // Chunked, so the length is not declared: a cap can only be hit mid-stream.
            let head = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n";
            let _ = s.write_all(head.as_bytes()).await;
            let _ = s.write_all(format!("{sent:x}\r\n").as_bytes()).await;
            let _ = s.write_all(&vec![b'x'; sent]).await;
            let _ = s.write_all(b"\r\n").await;
            let _ = s.flush().await;
            read_until_eof(&mut s).await;
            closed.notify_one();
            return;
        }
        Reply::Hold => unreachable!("handled above"),
    };
    let mut out = format!("HTTP/1.1 {status} Test\r\n");
    for (n, v) in headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    ));
    let _ = s.write_all(out.as_bytes()).await;
    let _ = s.write_all(&body).await;
    let _ = s.flush().await;
    let _ = s.shutdown().await;
}

/// A CA generated for one test run.
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl TestCa {
    pub fn new() -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "sluice egress test CA");
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        TestCa { issuer }
    }

    /// The CA certificate, PEM, to give the connector as an extra root.
    pub fn pem(&self) -> Vec<u8> {
        self.issuer.pem().into_bytes()
    }

    /// A rustls server config presenting a certificate for `name`, signed by this CA.
    pub fn server_config(&self, name: &str) -> Arc<ServerConfig> {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec![name.to_string()]).unwrap();
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let chain = vec![
            CertificateDer::from(cert.der().to_vec()),
            self.issuer.der().clone(),
        ];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        Arc::new(config)
    }
}
