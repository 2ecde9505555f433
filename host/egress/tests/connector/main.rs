//! The vetted connector against real servers on 127.0.0.1 (one test binary). This file
//! holds the shared helpers (a connector over a static resolver, a grant, `read_all`);
//! the cases are in its modules: `requests` (what is sent and returned, TLS, redirects,
//! connection errors), `addresses` (the network policy and deny list after resolution),
//! `allow_list` (the grant and the tenant's bound), `timeouts`, `body_caps` and `hooks`
//! (the types fit wasmtime's hooks). The test servers and CA are `../support`, shared
//! with the e2e tests.

#[path = "../support/mod.rs"]
mod support;

mod addresses;
mod allow_list;
mod body_caps;
mod hooks;
mod requests;
mod timeouts;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use sluice_egress::{
    AllowList, Connector, ConnectorConfig, EgressError, Grant, IoFuture, NetworkPolicy,
    RequestTimeouts, ResponseBody, StaticResolver,
};
use tokio::time::Instant;

const LOOPBACK: &str = "127.0.0.0/8";

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn connector(networks: &[&str], resolver: StaticResolver, extra_pem: Vec<u8>) -> Connector {
    Connector::new(ConnectorConfig {
        networks: NetworkPolicy::parse(networks).unwrap(),
        resolver: Arc::new(resolver),
        extra_root_certs_pem: extra_pem,
    })
    .unwrap()
}

fn api_test() -> StaticResolver {
    StaticResolver::new().with("api.test", [ip("127.0.0.1")])
}

fn grant(entries: &[String]) -> Grant {
    Grant::new(AllowList::parse_with(entries, &NetworkPolicy::parse([LOOPBACK]).unwrap()).unwrap())
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(10)
}

fn get(url: &str) -> Request<Empty<Bytes>> {
    Request::get(url).body(Empty::new()).unwrap()
}

type Sent = Result<(http::Response<ResponseBody>, IoFuture), EgressError>;

fn err(r: Sent) -> EgressError {
    match r {
        Ok((resp, _)) => panic!("expected an error, got {}", resp.status()),
        Err(e) => e,
    }
}

/// Spawns the io future and reads the whole body.
async fn read_all(r: Sent) -> (StatusCode, http::HeaderMap, Result<Bytes, EgressError>) {
    let (resp, io) = r.unwrap_or_else(|e| panic!("send failed: {e}"));
    tokio::spawn(io);
    let (parts, body) = resp.into_parts();
    let body = body.collect().await.map(|c| c.to_bytes());
    (parts.status, parts.headers, body)
}
