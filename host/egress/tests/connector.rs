//! The vetted connector against real servers on 127.0.0.1.

mod support;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Empty, Full, StreamBody};
use sluice_egress::{
    AllowList, Connector, ConnectorConfig, DenyReason, EgressError, Grant, IoFuture, NetworkPolicy,
    ReadPhase, RequestTimeouts, ResponseBody, StaticResolver, SystemResolver,
};
use support::{Reply, TestCa, TestServer};
use tokio::time::Instant;

const LOOPBACK: &str = "127.0.0.0/8";

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn connector(networks: &[&str], resolver: StaticResolver, extra_pem: Vec<u8>) -> Connector {
    Connector::new(ConnectorConfig {
        networks: NetworkPolicy::parse(networks).unwrap(),
        resolver: Arc::new(resolver),
        extra_root_certs_pem: extra_pem,
    })
    .unwrap()
}

fn api_test() -> StaticResolver {
    StaticResolver::new().with("api.test", [ip("127.0.0.1")])
}

fn grant(entries: &[String]) -> Grant {
    Grant::new(AllowList::parse_with(entries, &NetworkPolicy::parse([LOOPBACK]).unwrap()).unwrap())
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(10)
}

fn get(url: &str) -> Request<Empty<Bytes>> {
    Request::get(url).body(Empty::new()).unwrap()
}

type Sent = Result<(http::Response<ResponseBody>, IoFuture), EgressError>;

fn err(r: Sent) -> EgressError {
    match r {
        Ok((resp, _)) => panic!("expected an error, got {}", resp.status()),
        Err(e) => e,
    }
}

/// Spawns the io future and reads the whole body.
async fn read_all(r: Sent) -> (StatusCode, http::HeaderMap, Result<Bytes, EgressError>) {
    let (resp, io) = r.unwrap_or_else(|e| panic!("send failed: {e}"));
    tokio::spawn(io);
    let (parts, body) = resp.into_parts();
    let body = body.collect().await.map(|c| c.to_bytes());
    (parts.status, parts.headers, body)
}

#[tokio::test]
async fn plain_http_through_an_opened_network_reaches_the_server() {
    let server = TestServer::start(Reply::ok("pong")).await;
    let c = connector(&[LOOPBACK], api_test(), vec![]);
    let url = format!("http://api.test:{}/hook?x=1", server.port());
    let req = Request::post(&url)
        .header("host", "evil.example")
        .header("x-sluice", "1")
        .body(Full::new(Bytes::from_static(b"hello")))
        .unwrap();
    let g = grant(&[format!("http://api.test:{}", server.port())]);
    let (status, _, body) =
        read_all(c.send(req, &g, soon(), RequestTimeouts::default()).await).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body.unwrap(), "pong");
    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, "POST");
    assert_eq!(seen[0].target, "/hook?x=1");
    assert_eq!(
        seen[0].header("host"),
        Some(format!("api.test:{}", server.port()).as_str())
    );
    assert_eq!(seen[0].header("x-sluice"), Some("1"));
    assert_eq!(seen[0].body, b"hello");
}

#[tokio::test]
async fn https_with_a_test_ca_works_for_the_right_name() {
    let ca = TestCa::new();
    let server = TestServer::start_tls(Reply::ok("secure"), ca.server_config("api.test")).await;
    let c = connector(&[LOOPBACK], api_test(), ca.pem());
    let g = grant(&[format!("https://api.test:{}", server.port())]);
    let url = format!("https://api.test:{}/x", server.port());
    let (status, _, body) = read_all(
        c.send(get(&url), &g, soon(), RequestTimeouts::default())
            .await,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body.unwrap(), "secure");
    assert_eq!(
        server.requests()[0].header("host"),
        Some(format!("api.test:{}", server.port()).as_str())
    );
}

#[tokio::test]
async fn https_with_a_certificate_for_another_name_is_a_certificate_error() {
    let ca = TestCa::new();
    let server = TestServer::start_tls(Reply::ok("secure"), ca.server_config("other.test")).await;
    let c = connector(&[LOOPBACK], api_test(), ca.pem());
    let g = grant(&[format!("https://api.test:{}", server.port())]);
    let url = format!("https://api.test:{}/x", server.port());
    let e = err(c
        .send(get(&url), &g, soon(), RequestTimeouts::default())
        .await);
    assert!(matches!(e, EgressError::TlsCertificateError { .. }), "{e}");
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn https_without_the_test_ca_is_a_certificate_error() {
    let ca = TestCa::new();
    let server = TestServer::start_tls(Reply::ok("secure"), ca.server_config("api.test")).await;
    let c = connector(&[LOOPBACK], api_test(), vec![]);
    let g = grant(&[format!("https://api.test:{}", server.port())]);
    let url = format!("https://api.test:{}/x", server.port());
    let e = err(c
        .send(get(&url), &g, soon(), RequestTimeouts::default())
        .await);
    assert!(matches!(e, EgressError::TlsCertificateError { .. }), "{e}");
}

#[tokio::test]
async fn loopback_without_the_operator_network_is_prohibited_and_never_connected() {
    let server = TestServer::start(Reply::ok("pong")).await;
    let c = connector(&[], api_test(), vec![]);
    let g = grant(&[format!("http://api.test:{}", server.port())]);
    let url = format!("http://api.test:{}/", server.port());
    let e = err(c
        .send(get(&url), &g, soon(), RequestTimeouts::default())
        .await);
    match &e {
        EgressError::DestinationIpProhibited { addr, rule, .. } => {
            assert_eq!(*addr, ip("127.0.0.1"));
            assert_eq!(rule.name, "loopback 127.0.0.0/8");
        }
        other => panic!("{other}"),
    }
    assert!(e.to_string().contains("api.test"), "{e}");
    assert!(e.to_string().contains("loopback 127.0.0.0/8"), "{e}");
    assert_eq!(e.outcome(), "denied");
    assert_eq!(server.accepts(), 0);
}

#[tokio::test]
async fn names_resolving_to_private_or_metadata_addresses_are_prohibited() {
    for (addr, rule) in [
        ("10.0.0.1", "private 10.0.0.0/8"),
        ("169.254.169.254", "link-local/metadata 169.254.0.0/16"),
        ("fd00:ec2::254", "unique-local fc00::/7"),
    ] {
        // The operator network is open so only the deny list can refuse it.
        let c = connector(
            &[LOOPBACK],
            StaticResolver::new().with("meta.test", [ip(addr)]),
            vec![],
        );
        let g = grant(&["http://meta.test".to_string()]);
        let started = Instant::now();
        let e = err(c
            .send(
                get("http://meta.test/latest/meta-data"),
                &g,
                soon(),
                RequestTimeouts::default(),
            )
            .await);
        match e {
            EgressError::DestinationIpProhibited {
                addr: a, rule: r, ..
            } => {
                assert_eq!(a, ip(addr));
                assert_eq!(r.name, rule);
            }
            other => panic!("{addr}: {other}"),
        }
        // No connect attempt: refused without waiting on any network.
        assert!(started.elapsed() < Duration::from_millis(500));
    }
}

#[tokio::test]
async fn a_mix_of_addresses_connects_only_to_the_allowed_one() {
    let server = TestServer::start(Reply::ok("pong")).await;
    let resolver =
        StaticResolver::new().with("mixed.test", [ip("169.254.169.254"), ip("127.0.0.1")]);
    let c = connector(&["127.0.0.1/32"], resolver, vec![]);
    let g = grant(&[format!("http://mixed.test:{}", server.port())]);
    let url = format!("http://mixed.test:{}/", server.port());
    let (status, _, _) = read_all(
        c.send(get(&url), &g, soon(), RequestTimeouts::default())
            .await,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(server.accepts(), 1);
}

#[tokio::test]
async fn a_decimal_ip_through_the_system_resolver_is_prohibited() {
    let server = TestServer::start(Reply::ok("pong")).await;
    let c = Connector::new(ConnectorConfig::default()).unwrap();
    let g = Grant::new(AllowList::parse([format!("http://2130706433:{}", server.port())]).unwrap());
    let url = format!("http://2130706433:{}/", server.port());
    let e = err(c
        .send(get(&url), &g, soon(), RequestTimeouts::default())
        .await);
    match e {
        EgressError::DestinationIpProhibited { addr, .. } => assert_eq!(addr, ip("127.0.0.1")),
        other => panic!("{other}"),
    }
    assert_eq!(server.accepts(), 0);
}

#[tokio::test]
async fn localhost_through_the_system_resolver_is_prohibited() {
    let server = TestServer::start(Reply::ok("pong")).await;
    let c = Connector::new(ConnectorConfig {
        resolver: Arc::new(SystemResolver),
        ..ConnectorConfig::default()
    })
    .unwrap();
    let g = Grant::new(AllowList::parse([format!("http://localhost:{}", server.port())]).unwrap());
    let url = format!("http://localhost:{}/", server.port());
    let e = err(c
        .send(get(&url), &g, soon(), RequestTimeouts::default())
        .await);
    assert!(
        matches!(e, EgressError::DestinationIpProhibited { .. }),
        "{e}"
    );
    assert_eq!(server.accepts(), 0);
}

#[tokio::test]
async fn embedded_ipv4_literals_are_prohibited_even_with_loopback_open() {
    let server = TestServer::start(Reply::ok("pong")).await;
    let c = connector(&[LOOPBACK], StaticResolver::new(), vec![]);
    for host in ["[::ffff:127.0.0.1]", "[::127.0.0.1]", "[::1]", "0.0.0.0"] {
        let url = format!("http://{host}:{}/", server.port());
        let g = grant(&[format!("http://api.test:{}", server.port())]);
        let e = err(c
            .send(get(&url), &g, soon(), RequestTimeouts::default())
            .await);
        assert!(
            matches!(e, EgressError::DestinationIpProhibited { .. }),
            "{host}: {e}"
        );
    }
    assert_eq!(server.accepts(), 0);
}

#[tokio::test]
async fn a_host_or_port_not_on_the_list_is_denied_before_any_connection() {
    let server = TestServer::start(Reply::ok("pong")).await;
    let resolver = api_test().with("other.test", [ip("127.0.0.1")]);
    let c = connector(&[LOOPBACK], resolver, vec![]);
    let g = grant(&[format!("http://api.test:{}", server.port())]);

    let e = err(c
        .send(
            get(&format!("http://other.test:{}/", server.port())),
            &g,
            soon(),
            RequestTimeouts::default(),
        )
        .await);
    assert!(
        matches!(
            e,
            EgressError::HttpRequestDenied(DenyReason::HostNotListed { .. })
        ),
        "{e}"
    );
    let e = err(c
        .send(
            get("http://api.test/"),
            &g,
            soon(),
            RequestTimeouts::default(),
        )
        .await);
    assert!(
        matches!(
            e,
            EgressError::HttpRequestDenied(DenyReason::PortNotListed { port: 80, .. })
        ),
        "{e}"
    );
    let e = err(c
        .send(
            get(&format!("https://api.test:{}/", server.port())),
            &g,
            soon(),
            RequestTimeouts::default(),
        )
        .await);
    assert!(
        matches!(
            e,
            EgressError::HttpRequestDenied(DenyReason::HostNotListed { .. })
        ),
        "{e}"
    );
    let e = err(c
        .send(
            get("ftp://api.test/"),
            &g,
            soon(),
            RequestTimeouts::default(),
        )
        .await);
    assert!(
        matches!(
            e,
            EgressError::HttpRequestDenied(DenyReason::UnsupportedScheme(_))
        ),
        "{e}"
    );
    let e = err(c
        .send(get("/relative"), &g, soon(), RequestTimeouts::default())
        .await);
    assert!(matches!(e, EgressError::HttpRequestUriInvalid(_)), "{e}");
    assert_eq!(e.error_code(), "HTTP-request-URI-invalid");

    // Within the job type's list but outside the tenant's bound.
    let mut bounded = g.clone();
    bounded.bound = Some(AllowList::parse(["https://api.example.com"]).unwrap());
    let e = err(c
        .send(
            get(&format!("http://api.test:{}/", server.port())),
            &bounded,
            soon(),
            RequestTimeouts::default(),
        )
        .await);
    assert!(
        matches!(
            e,
            EgressError::HttpRequestDenied(DenyReason::OutsideBound { .. })
        ),
        "{e}"
    );
    assert_eq!(server.accepts(), 0);
}

#[tokio::test]
async fn the_deadline_cuts_a_slow_server_and_closes_the_connection() {
    let server = TestServer::start(Reply::Delay(Duration::from_secs(10))).await;
    let c = connector(&[LOOPBACK], api_test(), vec![]);
    let g = grant(&[format!("http://api.test:{}", server.port())]);
    let url = format!("http://api.test:{}/slow", server.port());
    let started = Instant::now();
    let deadline = started + Duration::from_millis(300);
    let e = err(c
        .send(get(&url), &g, deadline, RequestTimeouts::default())
        .await);
    let took = started.elapsed();
    assert!(
        matches!(
            e,
            EgressError::ConnectionReadTimeout {
                phase: ReadPhase::FirstByte,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(e.outcome(), "timeout");
    assert!(
        took >= Duration::from_millis(290) && took < Duration::from_millis(1500),
        "{took:?}"
    );
    tokio::time::timeout(Duration::from_secs(2), server.client_closed.notified())
        .await
        .expect("the server should see the connection closed");
}

#[tokio::test]
async fn a_guest_first_byte_timeout_shorter_than_the_cap_applies() {
    let server = TestServer::start(Reply::Delay(Duration::from_secs(10))).await;
    let c = connector(&[LOOPBACK], api_test(), vec![]);
    let g = grant(&[format!("http://api.test:{}", server.port())]);
    let url = format!("http://api.test:{}/slow", server.port());
    let started = Instant::now();
    let guest = RequestTimeouts {
        first_byte: Some(Duration::from_millis(200)),
        ..RequestTimeouts::default()
    };
    let e = err(c.send(get(&url), &g, soon(), guest).await);
    assert!(
        matches!(e, EgressError::ConnectionReadTimeout { .. }),
        "{e}"
    );
    assert!(started.elapsed() < Duration::from_millis(1500));
}

#[tokio::test]
async fn no_time_left_is_a_connection_timeout_without_connecting() {
    let server = TestServer::start(Reply::ok("pong")).await;
    let c = connector(&[LOOPBACK], api_test(), vec![]);
    let g = grant(&[format!("http://api.test:{}", server.port())]);
    let url = format!("http://api.test:{}/", server.port());
    let e = err(c
        .send(get(&url), &g, Instant::now(), RequestTimeouts::default())
        .await);
    assert!(matches!(e, EgressError::ConnectionTimeout { .. }), "{e}");
    assert_eq!(server.accepts(), 0);
}

#[tokio::test]
async fn a_stalled_body_hits_the_between_bytes_timeout() {
    let server = TestServer::start(Reply::Stall { sent: 10 }).await;
    let c = connector(&[LOOPBACK], api_test(), vec![]);
    let mut g = grant(&[format!("http://api.test:{}", server.port())]);
    g.limits.between_bytes_timeout = Duration::from_millis(200);
    let url = format!("http://api.test:{}/", server.port());
    let (status, _, body) = read_all(
        c.send(get(&url), &g, soon(), RequestTimeouts::default())
            .await,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let e = body.unwrap_err();
    assert!(
        matches!(
            e,
            EgressError::ConnectionReadTimeout {
                phase: ReadPhase::BetweenBytes,
                ..
            }
        ),
        "{e}"
    );
    tokio::time::timeout(Duration::from_secs(2), server.client_closed.notified())
        .await
        .expect("the server should see the connection closed");
}

#[tokio::test]
async fn a_response_declared_over_the_cap_fails_with_its_head() {
    let server = TestServer::start(Reply::Respond {
        status: 200,
        headers: vec![],
        body: vec![b'a'; 64 * 1024],
    })
    .await;
    let c = connector(&[LOOPBACK], api_test(), vec![]);
    let mut g = grant(&[format!("http://api.test:{}", server.port())]);
    g.limits.max_response_body_bytes = 1000;
    let url = format!("http://api.test:{}/big", server.port());
    // The server declares its length: the size error comes with the head, no body read.
    let e = c
        .send(get(&url), &g, soon(), RequestTimeouts::default())
        .await
        .err()
        .expect("a declared length over the cap is refused");
    assert!(matches!(e, EgressError::HttpResponseBodySize(1000)), "{e}");
    assert_eq!(e.error_code(), "HTTP-response-body-size");
}

#[tokio::test]
async fn a_request_body_over_the_cap_is_refused() {
    let server = TestServer::start(Reply::Hold).await;
    let c = connector(&[LOOPBACK], api_test(), vec![]);
    let mut g = grant(&[format!("http://api.test:{}", server.port())]);
    g.limits.max_request_body_bytes = 1000;
    let url = format!("http://api.test:{}/upload", server.port());

    // Known length: refused before connecting.
    let req = Request::post(&url)
        .body(Full::new(Bytes::from(vec![0u8; 2000])))
        .unwrap();
    let e = err(c.send(req, &g, soon(), RequestTimeouts::default()).await);
    assert!(
        matches!(e, EgressError::HttpRequestBodySize { cap: 1000 }),
        "{e}"
    );
    assert_eq!(server.accepts(), 0);

    // Streamed without a length: refused once the counter passes the cap.
    let chunks = (0..10)
        .map(|_| Ok::<_, std::io::Error>(http_body::Frame::data(Bytes::from(vec![1u8; 300]))));
    let req = Request::post(&url)
        .body(StreamBody::new(futures::stream::iter(chunks)))
        .unwrap();
    let e = err(c.send(req, &g, soon(), RequestTimeouts::default()).await);
    assert!(
        matches!(e, EgressError::HttpRequestBodySize { cap: 1000 }),
        "{e}"
    );
}

#[tokio::test]
async fn a_redirect_is_returned_not_followed() {
    let server = TestServer::start(Reply::Respond {
        status: 302,
        headers: vec![("location".into(), "http://169.254.169.254/latest".into())],
        body: vec![],
    })
    .await;
    let c = connector(&[LOOPBACK], api_test(), vec![]);
    let g = grant(&[format!("http://api.test:{}", server.port())]);
    let url = format!("http://api.test:{}/go", server.port());
    let (status, headers, _) = read_all(
        c.send(get(&url), &g, soon(), RequestTimeouts::default())
            .await,
    )
    .await;
    assert_eq!(status, StatusCode::FOUND);
    assert_eq!(headers["location"], "http://169.254.169.254/latest");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_closed_port_is_connection_refused() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let c = connector(&[LOOPBACK], api_test(), vec![]);
    let g = grant(&[format!("http://api.test:{port}")]);
    let e = err(c
        .send(
            get(&format!("http://api.test:{port}/")),
            &g,
            soon(),
            RequestTimeouts::default(),
        )
        .await);
    assert!(matches!(e, EgressError::ConnectionRefused { .. }), "{e}");
}

#[tokio::test]
async fn an_unknown_name_is_a_dns_error() {
    let c = connector(&[LOOPBACK], api_test(), vec![]);
    let g = grant(&["http://nowhere.test".to_string()]);
    let e = err(c
        .send(
            get("http://nowhere.test/"),
            &g,
            soon(),
            RequestTimeouts::default(),
        )
        .await);
    assert!(matches!(e, EgressError::DnsError { .. }), "{e}");
}

#[tokio::test]
async fn a_body_over_the_cap_mid_stream_closes_the_connection() {
    let server = TestServer::start(Reply::Stall { sent: 5_000 }).await;
    let c = connector(&[LOOPBACK], api_test(), vec![]);
    let mut g = grant(&[format!("http://api.test:{}", server.port())]);
    g.limits.max_response_body_bytes = 1000;
    let url = format!("http://api.test:{}/", server.port());
    let (_, _, body) = read_all(
        c.send(get(&url), &g, soon(), RequestTimeouts::default())
            .await,
    )
    .await;
    assert!(matches!(
        body.unwrap_err(),
        EgressError::HttpResponseBodySize(1000)
    ));
    tokio::time::timeout(Duration::from_secs(2), server.client_closed.notified())
        .await
        .expect("the server should see the connection closed");
}

#[tokio::test]
async fn the_attempt_deadline_also_ends_the_response_body() {
    let server = TestServer::start(Reply::Stall { sent: 10 }).await;
    let c = connector(&[LOOPBACK], api_test(), vec![]);
    let g = grant(&[format!("http://api.test:{}", server.port())]);
    let url = format!("http://api.test:{}/", server.port());
    let started = Instant::now();
    let deadline = started + Duration::from_millis(400);
    let (status, _, body) = read_all(
        c.send(get(&url), &g, deadline, RequestTimeouts::default())
            .await,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let e = body.unwrap_err();
    assert!(
        matches!(
            e,
            EgressError::ConnectionReadTimeout {
                phase: ReadPhase::Deadline | ReadPhase::BetweenBytes,
                ..
            }
        ),
        "{e}"
    );
    assert!(started.elapsed() < Duration::from_millis(1500));
    tokio::time::timeout(Duration::from_secs(2), server.client_closed.notified())
        .await
        .expect("the server should see the connection closed");
}

fn assert_send<T: Send>(_: &T) {}
fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn the_connector_fits_wasmtime_hooks() {
    // `WasiHttpHooks::send_request` returns `Box<dyn Future + Send>`: the send future,
    // the body and the io future must all be Send.
    assert_send_sync::<Connector>();
    fn body_is_send<T: Send + 'static>() {}
    body_is_send::<ResponseBody>();
    body_is_send::<IoFuture>();
    let c = Connector::new(ConnectorConfig::default()).unwrap();
    let g = Grant::default();
    let fut = c.send(
        get("http://example.com/"),
        &g,
        Instant::now(),
        RequestTimeouts::default(),
    );
    assert_send(&fut);
}
