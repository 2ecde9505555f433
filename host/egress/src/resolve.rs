//! Name resolution for the connector: the [`Resolver`] trait, the system resolver
//! (tokio's `lookup_host`, i.e. getaddrinfo) and an in-memory one for tests.
//! A resolver only answers; the connector filters what it returns through the deny
//! list and never resolves a name twice.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;

/// The future a [`Resolver`] returns.
pub type LookupFuture<'a> = Pin<Box<dyn Future<Output = io::Result<Vec<SocketAddr>>> + Send + 'a>>;

/// Resolves `(host, port)` to socket addresses. `host` is a normalised DNS name, never an
/// IP literal (the connector handles those itself).
pub trait Resolver: Send + Sync + 'static {
    /// Every address of `host`, each with `port`; an error or an empty list means the
    /// name does not resolve (the connector reports `DNS-error`). The connector bounds the
    /// wait with its DNS timeout.
    fn lookup<'a>(&'a self, host: &'a str, port: u16) -> LookupFuture<'a>;
}

/// The operating system's resolver, through `tokio::net::lookup_host`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn lookup<'a>(&'a self, host: &'a str, port: u16) -> LookupFuture<'a> {
        Box::pin(async move { Ok(tokio::net::lookup_host((host, port)).await?.collect()) })
    }
}

/// A fixed name -> addresses map. Unknown names fail like NXDOMAIN.
#[derive(Debug, Clone, Default)]
pub struct StaticResolver {
    names: HashMap<String, Vec<IpAddr>>,
}

impl StaticResolver {
    /// A resolver that knows no name: every lookup fails until [`StaticResolver::with`]
    /// adds one.
    pub fn new() -> Self {
        Self::default()
    }

    /// Maps `name` (case-insensitive) to `addrs`, replacing any earlier mapping.
    pub fn with(mut self, name: &str, addrs: impl IntoIterator<Item = IpAddr>) -> Self {
        self.names
            .insert(name.to_ascii_lowercase(), addrs.into_iter().collect());
        self
    }
}

impl Resolver for StaticResolver {
    fn lookup<'a>(&'a self, host: &'a str, port: u16) -> LookupFuture<'a> {
        let found = self
            .names
            .get(&host.to_ascii_lowercase())
            .map(|ips| ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect())
            .ok_or_else(|| {
                io::Error::new(io::ErrorKind::NotFound, format!("no such name `{host}`"))
            });
        Box::pin(std::future::ready(found))
    }
}
