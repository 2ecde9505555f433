use super::*;

fn entry(s: &str) -> AllowEntry {
    AllowEntry::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn list(entries: &[&str]) -> AllowList {
    AllowList::parse(entries).unwrap()
}

#[test]
fn good_entries_parse_to_their_canonical_form() {
    let cases = [
        ("https://api.example.com", "https://api.example.com:443"),
        ("http://api.example.com", "http://api.example.com:80"),
        ("HTTPS://API.Example.COM.", "https://api.example.com:443"),
        ("https://api.example.com/", "https://api.example.com:443"),
        (
            "https://api.example.com:8443",
            "https://api.example.com:8443",
        ),
        ("http://*.example.com", "http://*.example.com:80"),
        ("https://*.Example.com:9000", "https://*.example.com:9000"),
        ("https://1.1.1.1", "https://1.1.1.1:443"),
        (
            "http://[2606:4700::1111]:8080",
            "http://[2606:4700::1111]:8080",
        ),
        (
            "https://under_score.example.com",
            "https://under_score.example.com:443",
        ),
        (
            "https://xn--bcher-kva.example",
            "https://xn--bcher-kva.example:443",
        ),
        ("http://localhost:3001", "http://localhost:3001"),
        ("http://2130706433", "http://2130706433:80"),
        ("https://x:65535", "https://x:65535"),
    ];
    for (input, want) in cases {
        assert_eq!(entry(input).to_string(), want, "{input}");
    }
}

#[test]
fn malformed_entries_are_refused_naming_entry_and_problem() {
    let cases = [
        ("ftp://x", "scheme `ftp`"),
        ("spin.fermyon.dev", "missing `scheme://`"),
        ("spin.fermyon.dev:80", "missing `scheme://`"),
        ("*://example.com", "scheme `*`"),
        ("https://", "host is empty"),
        ("https://:443", "host is empty"),
        ("https://*.", "wildcard needs a suffix"),
        ("https://*", "wildcard needs a suffix"),
        ("https://*.*.example.com", "first label"),
        ("https://a*.example.com", "first label"),
        ("https://api.example.com/v1", "a path"),
        ("http://spin.fermyon.dev:6666/a/b", "a path"),
        ("http://*.fermyon.dev/a", "a path"),
        ("https://api.example.com?x=1", "a query"),
        ("https://api.example.com#frag", "a fragment"),
        ("https://user:pw@api.example.com", "userinfo"),
        ("https://bücher.example", "punycode"),
        ("https://api.example.com:0", "port 0"),
        ("https://api.example.com:65536", "out of range"),
        ("https://api.example.com:99999999999", "out of range"),
        ("https://api.example.com:", "not a number"),
        ("https://api.example.com:*", "not a number"),
        ("https://api..example.com", "empty label"),
        ("https://-api.example.com", "starts or ends"),
        (
            "https://127.0.0.1",
            "forbidden address (loopback 127.0.0.0/8)",
        ),
        (
            "http://10.0.0.1:8080",
            "forbidden address (private 10.0.0.0/8)",
        ),
        ("http://169.254.169.254", "forbidden address"),
        ("http://[::1]", "forbidden address (loopback ::1/128)"),
        ("http://[::ffff:127.0.0.1]", "via IPv4-mapped"),
        ("http://[fd00:ec2::254]", "unique-local"),
        ("http://2606:4700::1111", "brackets"),
        ("http://[example.com]", "not an IPv6 address"),
        ("http://[1.1.1.1]", "brackets"),
    ];
    for (input, problem) in cases {
        let err = AllowEntry::parse(input).expect_err(input);
        let msg = err.to_string();
        assert_eq!(err.entry, input);
        assert!(msg.contains(&format!("`{input}`")), "{input}: {msg}");
        assert!(msg.contains(problem), "{input}: want `{problem}` in: {msg}");
    }
}

#[test]
fn an_operator_network_lets_its_literals_be_listed() {
    let networks = NetworkPolicy::parse(["127.0.0.0/8"]).unwrap();
    let e = AllowEntry::parse_with("http://127.0.0.1:8080", &networks).unwrap();
    assert_eq!(e.to_string(), "http://127.0.0.1:8080");
    assert!(AllowEntry::parse_with("http://10.0.0.1", &networks).is_err());
}

#[test]
fn matching_exact_host_scheme_and_default_port() {
    let l = list(&["https://api.example.com", "http://example.com:8383"]);
    assert!(l.permits("https", "api.example.com", 443));
    assert!(l.permits("HTTPS", "API.example.com.", 443));
    assert!(!l.permits("http", "api.example.com", 80));
    assert!(!l.permits("https", "api.example.com", 8443));
    assert!(!l.permits("https", "example.com", 443));
    assert!(!l.permits("https", "xapi.example.com", 443));
    assert!(l.permits("http", "example.com", 8383));
    assert!(!l.permits("http", "example.com", 80));
    assert!(!l.permits("ftp", "example.com", 8383));
    assert!(!l.permits("https", "google.com", 443));
}

#[test]
fn a_wildcard_matches_subdomains_not_the_apex() {
    let l = list(&["http://*.example.com", "http://*.example2.com:8383"]);
    assert!(l.permits("http", "a.example.com", 80));
    assert!(l.permits("http", "a.b.example.com", 80));
    assert!(!l.permits("http", "example.com", 80));
    assert!(!l.permits("http", "myexample.com", 80));
    assert!(!l.permits("http", "a.example.com.evil.net", 80));
    assert!(l.permits("http", "a.b.example2.com", 8383));
    assert!(!l.permits("http", "a.b.example2.com", 80));
    assert!(!l.permits("http", "example2.com", 8383));
}

#[test]
fn ip_literals_match_only_ip_entries() {
    let l = list(&[
        "https://1.1.1.1",
        "https://[2606:4700::1111]",
        "https://*.1.1",
    ]);
    assert!(l.permits("https", "1.1.1.1", 443));
    assert!(l.permits("https", "[2606:4700::1111]", 443));
    assert!(l.permits("https", "2606:4700:0::1111", 443));
    assert!(!l.permits("https", "1.0.0.1", 443));
    // `*.1.1` is a name pattern; an address is never a subdomain.
    assert!(!l.permits("https", "8.8.1.1", 443));
}

#[test]
fn check_names_the_reason() {
    let l = list(&["https://api.example.com:8443"]);
    assert_eq!(
        l.check("https", "api.example.com", 443),
        Err(DenyReason::PortNotListed {
            scheme: "https".into(),
            host: "api.example.com".into(),
            port: 443
        })
    );
    assert_eq!(
        l.check("https", "other.example.com", 8443),
        Err(DenyReason::HostNotListed {
            scheme: "https".into(),
            host: "other.example.com".into()
        })
    );
    assert_eq!(
        l.check("gopher", "api.example.com", 8443),
        Err(DenyReason::UnsupportedScheme("gopher".into()))
    );
    assert!(AllowList::deny_all().check("https", "a.b", 443).is_err());
}

#[test]
fn coverage_and_narrowing() {
    let bound = list(&[
        "https://*.example.com",
        "https://api.other.com",
        "http://1.1.1.1:8080",
    ]);
    assert!(entry("https://a.example.com").is_covered_by(&entry("https://*.example.com")));
    assert!(entry("https://*.a.example.com").is_covered_by(&entry("https://*.example.com")));
    assert!(entry("https://*.example.com").is_covered_by(&entry("https://*.example.com")));
    assert!(!entry("https://example.com").is_covered_by(&entry("https://*.example.com")));
    assert!(!entry("https://*.example.com").is_covered_by(&entry("https://a.example.com")));
    assert!(!entry("http://a.example.com").is_covered_by(&entry("https://*.example.com")));
    assert!(!entry("https://a.example.com:8443").is_covered_by(&entry("https://*.example.com")));
    assert!(entry("https://a.example.com:443").is_covered_by(&entry("https://*.example.com")));

    assert_eq!(
        list(&[
            "https://x.example.com",
            "https://api.other.com:443",
            "http://1.1.1.1:8080"
        ])
        .check_within(&bound),
        Ok(())
    );
    assert_eq!(AllowList::deny_all().check_within(&bound), Ok(()));
    let err = list(&[
        "https://x.example.com",
        "https://evil.com",
        "https://example.com",
    ])
    .check_within(&bound)
    .unwrap_err();
    assert_eq!(err.entry, "https://evil.com:443");
    assert!(err.to_string().contains("`https://evil.com:443`"));
    assert!(
        list(&["https://a.b"])
            .check_within(&AllowList::deny_all())
            .is_err()
    );
}

#[test]
fn any_destination_permits_every_http_host_but_no_other_scheme_and_is_covered_only_by_itself() {
    let any = AllowList::any_destination();
    assert!(!any.is_empty());
    assert!(any.permits("https", "hooks.example.com", 8443));
    assert!(
        any.permits("http", "10.0.0.1", 80),
        "the deny list judges addresses, not the list"
    );
    assert!(!any.permits("ftp", "example.com", 21));
    let listed = AllowList::parse(["https://api.example.com"]).unwrap();
    assert!(any.check_within(&listed).is_err());
    assert!(listed.check_within(&any).is_ok());
}
