use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn rule(s: &str) -> String {
    deny_rule(ip(s))
        .unwrap_or_else(|| panic!("{s} should be denied"))
        .to_string()
}

#[test]
fn the_brief_addresses_are_denied_by_the_right_rule() {
    let cases = [
        ("127.0.0.1", "loopback 127.0.0.0/8"),
        ("10.0.0.1", "private 10.0.0.0/8"),
        ("172.16.0.1", "private 172.16.0.0/12"),
        ("192.168.1.1", "private 192.168.0.0/16"),
        ("100.64.0.1", "shared/CGNAT 100.64.0.0/10"),
        ("100.100.100.200", "shared/CGNAT 100.64.0.0/10"),
        ("169.254.169.254", "link-local/metadata 169.254.0.0/16"),
        ("169.254.170.2", "link-local/metadata 169.254.0.0/16"),
        ("0.0.0.0", "this-network 0.0.0.0/8"),
        ("255.255.255.255", "broadcast 255.255.255.255/32"),
        ("224.0.0.1", "multicast 224.0.0.0/4"),
        ("192.0.2.1", "documentation 192.0.2.0/24"),
        ("198.18.0.1", "benchmarking 198.18.0.0/15"),
        ("::1", "loopback ::1/128"),
        ("::", "unspecified ::/128"),
        (
            "::ffff:127.0.0.1",
            "loopback 127.0.0.0/8 via IPv4-mapped ::ffff:0:0/96",
        ),
        (
            "::127.0.0.1",
            "loopback 127.0.0.0/8 via IPv4-compatible ::/96",
        ),
        ("fe80::1", "link-local fe80::/10"),
        ("fc00::1", "unique-local fc00::/7"),
        ("fd00:ec2::254", "unique-local fc00::/7"),
        ("64:ff9b::a00:1", "NAT64 64:ff9b::/96"),
        ("2002:a00:1::", "6to4 2002::/16"),
        ("2001::1", "Teredo 2001::/32"),
        ("2001:db8::1", "documentation 2001:db8::/32"),
        ("ff02::1", "multicast ff00::/8"),
    ];
    for (addr, want) in cases {
        assert_eq!(rule(addr), want, "{addr}");
    }
}

#[test]
fn public_addresses_are_allowed() {
    for addr in [
        "93.184.216.34",
        "1.1.1.1",
        "8.8.8.8",
        "2606:4700::1111",
        "2001:4860:4860::8888",
        "::ffff:8.8.8.8",
        "2600::beef",
        "123.123.123.123",
    ] {
        assert_eq!(deny_rule(ip(addr)), None, "{addr}");
    }
}

// Ported from Svix `is_allowed_test` (server/svix-server/src/core/webhook_http_client.rs).
#[test]
fn svix_cases() {
    let denied = [
        "10.254.0.0",
        "192.168.10.65",
        "172.16.10.65",
        "0.1.2.3",
        "0.0.0.0",
        "127.0.0.1",
        "127.0.0.254",
        "127.254.254.254",
        "169.254.45.1",
        "255.255.255.255",
        "224.1.2.3",
        "233.252.0.16",
        "192.0.0.0",
        "192.0.0.255",
        "192.0.2.255",
        "198.51.100.65",
        "203.0.113.6",
        "100.100.0.0",
        "192.88.99.3",
        "198.18.0.0",
        "240.240.240.240",
        "::0",
        "::1",
        "::ffff:127.0.0.1",
        "::ffff:0.0.0.1",
        "2001:db8::1",
        "3fff::dead:beef",
        "fe80::dead:beef",
        "febf:ffff::dead:beef",
        "fdee:3A45:9057::0001",
        "fd7a:115c:a1e0::1",
        "2002:c000:0204::dead:beef",
        "2002:c0a8:0001::dead:beef",
        "64:ff9b::c0a8:0",
        "64:ff9b::808:808",
        "5f00::dead:beef",
        "64:ff9b:1::dead:beef",
        "100::1:2:3:4",
    ];
    for addr in denied {
        assert!(deny_rule(ip(addr)).is_some(), "{addr} should be denied");
    }
    for addr in [
        "1.1.1.1",
        "8.8.8.8",
        "2001:4860:4860::8888",
        "::ffff:8.8.8.8",
    ] {
        assert!(deny_rule(ip(addr)).is_none(), "{addr} should be allowed");
    }
}

// Ported from Spin `test_is_blocked_private` (outbound-networking-config/src/blocked_networks.rs).
#[test]
fn spin_cases() {
    for addr in [
        "0.0.0.0",
        "10.10.10.10",
        "100.64.1.1",
        "127.0.0.1",
        "169.254.0.1",
        "192.0.0.1",
        "::1",
        "::ffff:10.10.10.10",
        "fc00::f00d",
    ] {
        assert!(deny_rule(ip(addr)).is_some(), "{addr} should be denied");
    }
    assert!(deny_rule(ip("123.123.123.123")).is_none());
    assert!(deny_rule(ip("2600::beef")).is_none());
}

#[test]
fn an_operator_network_opens_only_its_own_family_and_range() {
    let policy = NetworkPolicy::parse(["127.0.0.0/8", "10.1.2.3/16"]).unwrap();
    assert_eq!(policy.opened()[1].to_string(), "10.1.0.0/16");
    assert_eq!(policy.check(ip("127.0.0.1")), Ok(()));
    assert_eq!(policy.check(ip("10.1.200.1")), Ok(()));
    assert!(policy.check(ip("10.2.0.1")).is_err());
    assert!(policy.check(ip("169.254.169.254")).is_err());
    // The mapped form is not opened by the v4 network.
    assert!(policy.check(ip("::ffff:127.0.0.1")).is_err());
    assert!(policy.check(ip("::1")).is_err());
    // Public addresses pass with or without exceptions.
    assert_eq!(NetworkPolicy::default().check(ip("1.1.1.1")), Ok(()));
    let single = NetworkPolicy::parse(["127.0.0.1"]).unwrap();
    assert_eq!(single.check(ip("127.0.0.1")), Ok(()));
    assert!(single.check(ip("127.0.0.2")).is_err());
}

#[test]
fn a_bad_network_is_refused_naming_it() {
    let err = NetworkPolicy::parse(["10.0.0.0/33"]).unwrap_err();
    assert!(err.to_string().contains("`10.0.0.0/33`"), "{err}");
    assert!(NetworkPolicy::parse(["example.com"]).is_err());
}
