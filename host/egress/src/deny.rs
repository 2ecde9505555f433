//! The SSRF deny list (capabilities.md §C.2) and the operator's exceptions to it.
//!
//! [`deny_rule`] classifies one address: it returns the rule that refuses it, or `None`
//! for a public address. IPv6 forms that embed an IPv4 address (IPv4-mapped
//! `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`) are also checked as that IPv4.
//! [`NetworkPolicy`] holds the networks an operator opened (`--egress-allow-network`).
//! This module never resolves names or connects; it only classifies addresses.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

/// The rule of the deny list that refused an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DenyRule {
    /// The rule, e.g. `loopback 127.0.0.0/8`.
    pub name: &'static str,
    /// Set when an IPv6 address was refused for the IPv4 address it embeds, e.g.
    /// `IPv4-mapped ::ffff:0:0/96`.
    pub via: Option<&'static str>,
}

impl fmt::Display for DenyRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.via {
            Some(via) => write!(f, "{} via {}", self.name, via),
            None => f.write_str(self.name),
        }
    }
}

const fn v4(a: u8, b: u8, c: u8, d: u8, len: u8) -> Ipv4Net {
    Ipv4Net::new_assert(Ipv4Addr::new(a, b, c, d), len)
}

const fn v6(s: [u16; 8], len: u8) -> Ipv6Net {
    Ipv6Net::new_assert(
        Ipv6Addr::new(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]),
        len,
    )
}

const V4_RULES: &[(Ipv4Net, &str)] = &[
    (v4(0, 0, 0, 0, 8), "this-network 0.0.0.0/8"),
    (v4(10, 0, 0, 0, 8), "private 10.0.0.0/8"),
    (v4(100, 64, 0, 0, 10), "shared/CGNAT 100.64.0.0/10"),
    (v4(127, 0, 0, 0, 8), "loopback 127.0.0.0/8"),
    (v4(169, 254, 0, 0, 16), "link-local/metadata 169.254.0.0/16"),
    (v4(172, 16, 0, 0, 12), "private 172.16.0.0/12"),
    (
        v4(192, 0, 0, 0, 24),
        "IETF protocol assignments 192.0.0.0/24",
    ),
    (v4(192, 0, 2, 0, 24), "documentation 192.0.2.0/24"),
    (v4(192, 88, 99, 0, 24), "6to4 relay anycast 192.88.99.0/24"),
    (v4(192, 168, 0, 0, 16), "private 192.168.0.0/16"),
    (v4(198, 18, 0, 0, 15), "benchmarking 198.18.0.0/15"),
    (v4(198, 51, 100, 0, 24), "documentation 198.51.100.0/24"),
    (v4(203, 0, 113, 0, 24), "documentation 203.0.113.0/24"),
    (v4(224, 0, 0, 0, 4), "multicast 224.0.0.0/4"),
    // 255.255.255.255 is inside 240/4; name the broadcast address on its own first.
    (v4(255, 255, 255, 255, 32), "broadcast 255.255.255.255/32"),
    (v4(240, 0, 0, 0, 4), "reserved 240.0.0.0/4"),
];

const V6_RULES: &[(Ipv6Net, &str)] = &[
    (v6([0, 0, 0, 0, 0, 0, 0, 0], 128), "unspecified ::/128"),
    (v6([0, 0, 0, 0, 0, 0, 0, 1], 128), "loopback ::1/128"),
    (
        v6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96),
        "NAT64 64:ff9b::/96",
    ),
    (
        v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48),
        "local NAT64 64:ff9b:1::/48",
    ),
    (v6([0x100, 0, 0, 0, 0, 0, 0, 0], 64), "discard 100::/64"),
    (
        v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32),
        "documentation 2001:db8::/32",
    ),
    (v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 32), "Teredo 2001::/32"),
    (v6([0x2002, 0, 0, 0, 0, 0, 0, 0], 16), "6to4 2002::/16"),
    (
        v6([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20),
        "documentation 3fff::/20",
    ),
    (v6([0x5f00, 0, 0, 0, 0, 0, 0, 0], 16), "SRv6 SIDs 5f00::/16"),
    (
        v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7),
        "unique-local fc00::/7",
    ),
    (
        v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10),
        "link-local fe80::/10",
    ),
    (
        v6([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10),
        "site-local fec0::/10",
    ),
    (v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8), "multicast ff00::/8"),
];

const VIA_MAPPED: &str = "IPv4-mapped ::ffff:0:0/96";
const VIA_COMPATIBLE: &str = "IPv4-compatible ::/96";

fn v4_rule(ip: Ipv4Addr) -> Option<&'static str> {
    V4_RULES
        .iter()
        .find(|(net, _)| net.contains(&ip))
        .map(|(_, name)| *name)
}

/// The deny-list rule that refuses `ip`, or `None` if the address is public.
///
/// Operator exceptions are not considered here; see [`NetworkPolicy::check`].
pub fn deny_rule(ip: IpAddr) -> Option<DenyRule> {
    match ip {
        IpAddr::V4(ip) => v4_rule(ip).map(|name| DenyRule { name, via: None }),
        IpAddr::V6(ip) => {
            if let Some((_, name)) = V6_RULES.iter().find(|(net, _)| net.contains(&ip)) {
                return Some(DenyRule { name, via: None });
            }
            let (embedded, via) = if let Some(v4) = ip.to_ipv4_mapped() {
                (v4, VIA_MAPPED)
            } else if let Some(v4) = ip.to_ipv4() {
                (v4, VIA_COMPATIBLE)
            } else {
                return None;
            };
            v4_rule(embedded).map(|name| DenyRule {
                name,
                via: Some(via),
            })
        }
    }
}

/// Networks the operator opened despite the deny list (`--egress-allow-network`).
///
/// An opened network only lifts the deny list for addresses of the same family inside
/// it: opening `127.0.0.0/8` does not open `::ffff:127.0.0.1`. The allow list still
/// applies on top: an opened network makes a destination reachable, not permitted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkPolicy {
    opened: Vec<IpNet>,
}

/// A CIDR given to [`NetworkPolicy::parse`] that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("egress network `{input}` is not a CIDR (e.g. 10.1.0.0/16): {detail}")]
pub struct NetworkParseError {
    /// The text given, trimmed (one item of `--egress-allow-network`).
    pub input: String,
    /// Why it is neither a CIDR nor a bare address (the parser's message).
    pub detail: String,
}

impl NetworkPolicy {
    /// No exceptions: the whole deny list applies.
    pub fn deny_all_private() -> Self {
        Self::default()
    }

    /// Opens the given networks.
    pub fn new(opened: impl IntoIterator<Item = IpNet>) -> Self {
        Self {
            opened: opened.into_iter().map(|n| n.trunc()).collect(),
        }
    }

    /// Parses CIDRs such as `10.1.0.0/16` or `127.0.0.1/32` (a bare address means /32 or /128).
    pub fn parse<S: AsRef<str>>(
        cidrs: impl IntoIterator<Item = S>,
    ) -> Result<Self, NetworkParseError> {
        let mut opened = Vec::new();
        for s in cidrs {
            let s = s.as_ref().trim();
            let net = IpNet::from_str(s)
                .or_else(|e| IpAddr::from_str(s).map(IpNet::from).map_err(|_| e))
                .map_err(|e| NetworkParseError {
                    input: s.to_string(),
                    detail: e.to_string(),
                })?;
            opened.push(net);
        }
        Ok(Self::new(opened))
    }

    /// The networks opened, normalised (host bits cleared).
    pub fn opened(&self) -> &[IpNet] {
        &self.opened
    }

    /// Whether an operator network contains `ip` (same address family only).
    pub fn is_opened(&self, ip: IpAddr) -> bool {
        self.opened.iter().any(|net| net.contains(&ip))
    }

    /// `Err(rule)` if the deny list refuses `ip` and no opened network contains it.
    pub fn check(&self, ip: IpAddr) -> Result<(), DenyRule> {
        match deny_rule(ip) {
            Some(rule) if !self.is_opened(ip) => Err(rule),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
#[path = "deny_tests.rs"]
mod tests;
