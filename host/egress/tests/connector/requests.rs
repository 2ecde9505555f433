//! Requests the connector sends and what comes back: plain HTTP through an opened network
//! reaches the server as sent (method, target, headers, body; `Host` from the URL, not
//! the caller); HTTPS with a test CA works for the right name only; a redirect is
//! returned, not followed; a closed port is `ConnectionRefused` and an unknown name a DNS
//! error.

use super::*;
use http_body_util::Full;
use support::{Reply, TestCa, TestServer};

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
