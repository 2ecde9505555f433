//! The job type's allow list and the tenant's bound, checked before any connection: a
//! host, port or scheme off the list, a relative URI, or a destination on the list but
//! outside the bound is denied with its reason, and the server sees no connection.

use super::*;
use sluice_egress::DenyReason;
use support::{Reply, TestServer};

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
