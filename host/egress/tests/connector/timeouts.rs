//! Time limits: the attempt's deadline cuts a slow server (and a response body) and
//! closes the connection; a guest's first-byte timeout shorter than the cap applies; no
//! time left is a connection timeout without connecting; a stalled body hits the
//! between-bytes timeout.

use super::*;
use sluice_egress::ReadPhase;
use support::{Reply, TestServer};

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
