//! Outbound HTTP under an egress policy: the one SSRF implementation of Sluice.
//!
//! The guest path (`wasi:http/outgoing-handler`, wired by the sandbox crate) and webhook
//! delivery both send through [`Connector::send`]. This crate owns:
//! - allow-list entries `scheme://host[:port]` ([`AllowEntry`], [`AllowList`]);
//! - the IP deny list ([`deny_rule`]) and operator-opened networks ([`NetworkPolicy`]);
//! - name resolution ([`Resolver`], [`SystemResolver`], [`StaticResolver`]);
//! - the vetted connector ([`Connector`], [`Grant`], [`Limits`], [`RequestTimeouts`]);
//! - the errors ([`EgressError`]), one per `wasi:http` `error-code` it can produce.
//!
//! Modules import downward only (`module_order.rs` tests it): `deny`, `limits`, `resolve`,
//! `tls` are leaves; `error` → `deny`; `allow` → `deny`, `error`; `body` → `error`;
//! `connector` above them all.
//!
//! It must not depend on wasmtime, SQL or the metrics registry: grants come from the
//! caller, errors are mapped by the caller, metrics use [`EgressError::outcome`].

#![warn(missing_docs)]

mod allow;
mod body;
mod connector;
mod deny;
mod error;
mod limits;
#[cfg(test)]
mod module_order;
mod resolve;
mod tls;

pub use allow::{AllowEntry, AllowEntryError, AllowList, NotCovered, Scheme};
pub use body::ResponseBody;
pub use connector::{Connector, ConnectorConfig, Grant, IoFuture};
pub use deny::{DenyRule, NetworkParseError, NetworkPolicy, deny_rule};
pub use error::{DenyReason, EgressError, ReadPhase};
pub use limits::{Limits, RequestTimeouts, clamp};
pub use resolve::{LookupFuture, Resolver, StaticResolver, SystemResolver};
pub use tls::TlsConfigError;
