//! Allow-list entries `scheme://host[:port]` and the lists made of them.
//!
//! An entry names a scheme (`http` or `https`), a host (an exact DNS name, `*.suffix` for
//! any subdomain of `suffix` but not `suffix` itself, or a public IP literal) and a port
//! (the scheme's default port when none is written). [`AllowList::permits`] answers for
//! one destination; [`AllowList::check_within`] checks that a job type's list stays
//! inside the tenant's bound. This module knows nothing about DNS or sockets.

use std::fmt;
use std::net::IpAddr;

use crate::deny::NetworkPolicy;
use crate::error::DenyReason;

/// A malformed allow-list entry. The message names the entry and the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("allow-list entry `{entry}`: {problem}")]
pub struct AllowEntryError {
    /// The entry as given (untrimmed).
    pub entry: String,
    /// What is wrong with it and, where it helps, what to write instead.
    pub problem: String,
}

/// An entry of a bound that does not cover an entry of the list checked against it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("allow-list entry `{entry}` is outside the bound")]
pub struct NotCovered {
    /// The uncovered entry in canonical form (`scheme://host:port`), or `any destination`
    /// when a list granting every destination is checked against a narrower bound.
    pub entry: String,
}

/// The scheme of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// `http`: plain text, default port 80.
    Http,
    /// `https`: TLS with the URL's host as the server name, default port 443.
    Https,
}

impl Scheme {
    /// `http` / `https`, case-insensitively; anything else is `None`.
    pub fn parse(s: &str) -> Option<Scheme> {
        if s.eq_ignore_ascii_case("http") {
            Some(Scheme::Http)
        } else if s.eq_ignore_ascii_case("https") {
            Some(Scheme::Https)
        } else {
            None
        }
    }

    /// `http` or `https`, lowercase, as written back in entries and error messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }

    /// 80 or 443.
    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum HostPattern {
    /// A normalised DNS name.
    Exact(String),
    /// `*.suffix`: stores `suffix`; matches names ending in `.suffix`.
    Subdomains(String),
    Ip(IpAddr),
}

/// One parsed allow-list entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AllowEntry {
    scheme: Scheme,
    host: HostPattern,
    port: u16,
}

/// Lowercases, strips one trailing dot and the brackets of an IPv6 literal.
pub(crate) fn normalise_host(host: &str) -> String {
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let host = host.strip_suffix('.').unwrap_or(host);
    host.to_ascii_lowercase()
}

fn valid_dns_name(name: &str) -> Result<(), String> {
    if name.len() > 253 {
        return Err("host name longer than 253 characters".into());
    }
    for label in name.split('.') {
        if label.is_empty() {
            return Err("host name has an empty label".into());
        }
        if label.len() > 63 {
            return Err(format!("label `{label}` is longer than 63 characters"));
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(format!(
                "label `{label}` may only contain letters, digits, `-` and `_`"
            ));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(format!("label `{label}` starts or ends with `-`"));
        }
    }
    Ok(())
}

impl AllowEntry {
    /// Parses `scheme://host[:port]` with no operator exceptions: private IP literals are refused.
    pub fn parse(entry: &str) -> Result<AllowEntry, AllowEntryError> {
        Self::parse_with(entry, &NetworkPolicy::default())
    }

    /// Like [`AllowEntry::parse`], but an IP literal inside a network the operator opened
    /// is accepted (e.g. `http://127.0.0.1:8080` with `127.0.0.0/8` open).
    pub fn parse_with(
        entry: &str,
        networks: &NetworkPolicy,
    ) -> Result<AllowEntry, AllowEntryError> {
        let fail = |problem: String| AllowEntryError {
            entry: entry.to_string(),
            problem,
        };
        let trimmed = entry.trim();
        let (scheme, rest) = trimmed.split_once("://").ok_or_else(|| {
            fail("missing `scheme://` (expected e.g. https://api.example.com)".into())
        })?;
        let scheme = Scheme::parse(scheme).ok_or_else(|| {
            fail(format!(
                "scheme `{scheme}` is not supported (use http or https)"
            ))
        })?;
        // A single trailing `/` is tolerated (as Spin does); anything else after the authority is not.
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        for (c, what) in [('/', "a path"), ('?', "a query"), ('#', "a fragment")] {
            if rest.contains(c) {
                return Err(fail(format!(
                    "{what} is not allowed, only scheme://host[:port]"
                )));
            }
        }
        if rest.contains('@') {
            return Err(fail("userinfo (`user@`) is not allowed".into()));
        }
        if !rest.is_ascii() {
            return Err(fail(
                "the host is not ASCII; write an internationalised name in punycode (xn--...)"
                    .into(),
            ));
        }
        let (host, port) = split_host_port(rest).map_err(fail)?;
        let port = match port {
            None => scheme.default_port(),
            Some(p) => parse_port(p).map_err(fail)?,
        };
        let host = parse_host(host, networks).map_err(fail)?;
        Ok(AllowEntry { scheme, host, port })
    }

    /// The scheme the entry permits; an entry never permits the other one.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The effective port (the scheme's default when the entry names none).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether this entry permits `scheme://host:port`; `host` must already be normalised.
    fn matches(&self, scheme: Scheme, host: &Host<'_>, port: u16) -> bool {
        self.scheme == scheme && self.port == port && self.matches_host(host)
    }

    fn matches_host(&self, host: &Host<'_>) -> bool {
        match (&self.host, host) {
            (HostPattern::Exact(e), Host::Name(n)) => e == n,
            (HostPattern::Subdomains(s), Host::Name(n)) => is_subdomain(n, s),
            (HostPattern::Ip(e), Host::Ip(ip)) => e == ip,
            _ => false,
        }
    }

    /// Whether every destination this entry permits is also permitted by `bound`.
    pub fn is_covered_by(&self, bound: &AllowEntry) -> bool {
        if self.scheme != bound.scheme || self.port != bound.port {
            return false;
        }
        match (&self.host, &bound.host) {
            (HostPattern::Exact(a), HostPattern::Exact(b)) => a == b,
            (HostPattern::Exact(a), HostPattern::Subdomains(s)) => is_subdomain(a, s),
            (HostPattern::Subdomains(a), HostPattern::Subdomains(s)) => {
                a == s || is_subdomain(a, s)
            }
            (HostPattern::Ip(a), HostPattern::Ip(b)) => a == b,
            _ => false,
        }
    }
}

fn is_subdomain(name: &str, suffix: &str) -> bool {
    name.len() > suffix.len() + 1
        && name.ends_with(suffix)
        && name.as_bytes()[name.len() - suffix.len() - 1] == b'.'
}

fn split_host_port(authority: &str) -> Result<(&str, Option<&str>), String> {
    if authority.starts_with('[') {
        let end = authority
            .find(']')
            .ok_or_else(|| "unterminated `[` in an IPv6 literal".to_string())?;
        let (host, after) = authority.split_at(end + 1);
        return match after {
            "" => Ok((host, None)),
            _ => match after.strip_prefix(':') {
                Some(port) => Ok((host, Some(port))),
                None => Err(format!("unexpected `{after}` after the IPv6 literal")),
            },
        };
    }
    match authority.rsplit_once(':') {
        Some((host, port)) => {
            if host.contains(':') {
                return Err(
                    "an IPv6 literal must be written in brackets, e.g. [2606:4700::1111]".into(),
                );
            }
            Ok((host, Some(port)))
        }
        None => Ok((authority, None)),
    }
}

fn parse_port(port: &str) -> Result<u16, String> {
    if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("port `{port}` is not a number"));
    }
    match port.parse::<u32>() {
        Ok(0) => Err("port 0 is not allowed".into()),
        Ok(p) if p <= u32::from(u16::MAX) => Ok(p as u16),
        _ => Err(format!("port {port} is out of range (1-65535)")),
    }
}

fn parse_host(host: &str, networks: &NetworkPolicy) -> Result<HostPattern, String> {
    if host.is_empty() {
        return Err("the host is empty".into());
    }
    let bracketed = host.starts_with('[');
    let host = normalise_host(host);
    if let Ok(ip) = host.parse::<IpAddr>() {
        if bracketed != ip.is_ipv6() {
            return Err("an IPv6 literal must be written in brackets".into());
        }
        if let Err(rule) = networks.check(ip) {
            return Err(format!("{ip} is a forbidden address ({rule})"));
        }
        return Ok(HostPattern::Ip(ip));
    }
    if bracketed {
        return Err(format!("`[{host}]` is not an IPv6 address"));
    }
    if host == "*" || host == "*." || host.is_empty() {
        return Err("a wildcard needs a suffix, e.g. *.example.com".into());
    }
    if let Some(suffix) = host.strip_prefix("*.") {
        if suffix.contains('*') {
            return Err("`*` is only allowed as the whole first label (*.example.com)".into());
        }
        valid_dns_name(suffix)?;
        return Ok(HostPattern::Subdomains(suffix.to_string()));
    }
    if host.contains('*') {
        return Err("`*` is only allowed as the whole first label (*.example.com)".into());
    }
    valid_dns_name(&host)?;
    Ok(HostPattern::Exact(host))
}

impl fmt::Display for AllowEntry {
    /// The canonical form, with the port always written.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://", self.scheme.as_str())?;
        match &self.host {
            HostPattern::Exact(h) => f.write_str(h)?,
            HostPattern::Subdomains(s) => write!(f, "*.{s}")?,
            HostPattern::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]")?,
            HostPattern::Ip(ip) => write!(f, "{ip}")?,
        }
        write!(f, ":{}", self.port)
    }
}

/// A destination host as seen by the matcher.
enum Host<'a> {
    Name(&'a str),
    Ip(IpAddr),
}

/// A list of entries; the empty list permits nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    entries: Vec<AllowEntry>,
    /// Every http(s) destination (webhook endpoints: their owner names the URL); the deny
    /// list and a tenant's bound still apply.
    any: bool,
}

impl AllowList {
    /// The empty list: nothing is permitted.
    pub fn deny_all() -> Self {
        Self::default()
    }

    /// Every http(s) destination the deny list (and a bound, if any) leaves: what a
    /// webhook delivery is granted, since its owner chose the URL.
    pub fn any_destination() -> Self {
        Self {
            entries: Vec::new(),
            any: true,
        }
    }

    /// Parses every entry; the first malformed one is the error.
    pub fn parse<S: AsRef<str>>(
        entries: impl IntoIterator<Item = S>,
    ) -> Result<Self, AllowEntryError> {
        Self::parse_with(entries, &NetworkPolicy::default())
    }

    /// Parses with operator-opened networks (see [`AllowEntry::parse_with`]).
    pub fn parse_with<S: AsRef<str>>(
        entries: impl IntoIterator<Item = S>,
        networks: &NetworkPolicy,
    ) -> Result<Self, AllowEntryError> {
        let entries = entries
            .into_iter()
            .map(|e| AllowEntry::parse_with(e.as_ref(), networks))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            entries,
            any: false,
        })
    }

    /// The parsed entries, in the order given (empty for [`AllowList::any_destination`]).
    pub fn entries(&self) -> &[AllowEntry] {
        &self.entries
    }

    /// Whether the list permits nothing: no entries, and not
    /// [`AllowList::any_destination`].
    pub fn is_empty(&self) -> bool {
        !self.any && self.entries.is_empty()
    }

    /// Whether `scheme://host:port` is permitted. `host` is normalised here (case, one
    /// trailing dot, IPv6 brackets); a scheme other than http/https is never permitted.
    pub fn permits(&self, scheme: &str, host: &str, port: u16) -> bool {
        self.check(scheme, host, port).is_ok()
    }

    /// Like [`AllowList::permits`], with the reason for a refusal.
    pub fn check(&self, scheme: &str, host: &str, port: u16) -> Result<(), DenyReason> {
        let Some(s) = Scheme::parse(scheme) else {
            return Err(DenyReason::UnsupportedScheme(scheme.to_string()));
        };
        if self.any {
            return Ok(());
        }
        let host = normalise_host(host);
        let h = match host.parse::<IpAddr>() {
            Ok(ip) => Host::Ip(ip),
            Err(_) => Host::Name(&host),
        };
        if self.entries.iter().any(|e| e.matches(s, &h, port)) {
            return Ok(());
        }
        let scheme = s.as_str().to_string();
        if self
            .entries
            .iter()
            .any(|e| e.scheme == s && e.matches_host(&h))
        {
            Err(DenyReason::PortNotListed { scheme, host, port })
        } else {
            Err(DenyReason::HostNotListed { scheme, host })
        }
    }

    /// `Ok` if every entry of `self` is covered by some entry of `bound`; otherwise the
    /// first uncovered entry. Used so a job type's list can only narrow the tenant's bound.
    pub fn check_within(&self, bound: &AllowList) -> Result<(), NotCovered> {
        if self.any && !bound.any {
            return Err(NotCovered {
                entry: "any destination".into(),
            });
        }
        if bound.any {
            return Ok(());
        }
        match self
            .entries
            .iter()
            .find(|e| !bound.entries.iter().any(|b| e.is_covered_by(b)))
        {
            Some(e) => Err(NotCovered {
                entry: e.to_string(),
            }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
#[path = "allow_tests.rs"]
mod tests;
