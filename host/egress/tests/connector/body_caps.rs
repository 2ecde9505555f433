//! Body caps: a response declared over the cap fails with its head, one over the cap
//! mid-stream fails and closes the connection; a request body over the cap is refused,
//! before connecting when its length is known, once the count passes the cap when
//! streamed.

use super::*;
use http_body_util::{Full, StreamBody};
use support::{Reply, TestServer};

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
