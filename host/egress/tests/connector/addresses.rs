//! The operator's network policy and the SSRF deny list, checked on the addresses a name
//! resolves to: loopback without the operator's network, private and metadata addresses,
//! a decimal IP or `localhost` through the system resolver, and IPv4 embedded in IPv6
//! literals are prohibited and never connected; of a mix of addresses only the allowed
//! one is.

use super::*;
use sluice_egress::SystemResolver;
use support::{Reply, TestServer};

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
