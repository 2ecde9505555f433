//! How tenants and their tokens look in JSON: a tenant with its caps and egress bound
//! ([`TenantView`]: `GET /v1/tenants/{id}`, `sluice tenants show|list|limits|egress
//! --json`), a token without its secret ([`TokenView`]: `sluice tenants token list|revoke
//! --json`) and a token just minted, with its secret shown once ([`NewTokenView`]).
//!
//! Owns: these shapes and their conversions from `sluice_store`'s rows. Must not: read or
//! write anything, or show a token's secret anywhere but [`NewTokenView`].

use chrono::{DateTime, Utc};
use serde::Serialize;
use sluice_store::{NewToken, TenantRecord, TokenRecord};
use utoipa::ToSchema;

/// A tenant and its caps; a null cap means the host default applies.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantView {
    /// A lowercase slug (`acme`, `team-7`).
    #[schema(min_length = 1, max_length = 63)]
    pub id: String,
    /// When the tenant was created.
    pub created_at: DateTime<Utc>,
    /// Largest job payload, in bytes.
    #[schema(required = true)]
    pub max_payload_bytes: Option<i32>,
    /// Largest component upload, in bytes.
    #[schema(required = true)]
    pub max_component_bytes: Option<i64>,
    /// Cap on a job type's timeout per attempt, in milliseconds.
    #[schema(required = true)]
    pub max_timeout_ms: Option<i64>,
    /// Cap on a job type's fuel per attempt.
    #[schema(required = true)]
    pub max_fuel: Option<i64>,
    /// Cap on a job type's memory per attempt, in bytes.
    #[schema(required = true)]
    pub max_memory_bytes: Option<i64>,
    /// Cap on an attempt's output, in bytes.
    #[schema(required = true)]
    pub max_output_bytes: Option<i64>,
    /// Cap on the log bytes kept per attempt.
    #[schema(required = true)]
    pub max_log_bytes: Option<i64>,
    /// Jobs per second the HTTP API accepts (null: unlimited).
    #[schema(required = true)]
    pub max_enqueue_per_sec: Option<f64>,
    /// Jobs accepted at once after a quiet period (null: one second's worth of the rate).
    #[schema(required = true)]
    pub enqueue_burst: Option<i32>,
    /// Cap on a job type's outbound requests per attempt.
    #[schema(required = true)]
    pub max_http_requests: Option<i32>,
    /// Cap on a job type's request body per outbound request, in bytes.
    #[schema(required = true)]
    pub max_http_request_bytes: Option<i64>,
    /// Cap on a job type's response body per outbound request, in bytes.
    #[schema(required = true)]
    pub max_http_response_bytes: Option<i64>,
    /// Follow-up jobs one attempt may enqueue.
    #[schema(required = true)]
    pub max_follow_ups: Option<i32>,
    /// Payload bytes of one attempt's follow-up jobs together.
    #[schema(required = true)]
    pub max_follow_up_bytes: Option<i64>,
    /// Cap on one durable job's journal, in bytes (docs/durable.md).
    #[schema(required = true)]
    pub max_journal_bytes: Option<i64>,
    /// Daily quota: runs the tenant's jobs may start per UTC day (null: none;
    /// docs/usage.md).
    #[schema(required = true, minimum = 1)]
    pub max_attempts_per_day: Option<i64>,
    /// Daily quota: fuel the tenant's runs may burn per UTC day (null: none).
    #[schema(required = true, minimum = 1)]
    pub max_fuel_per_day: Option<i64>,
    /// Daily quota: outbound HTTP body bytes, sent and received, per UTC day (null: none).
    #[schema(required = true, minimum = 1)]
    pub max_egress_bytes_per_day: Option<i64>,
    /// The operator's bound on what the tenant's job types may be granted over HTTP
    /// (normalised entries; empty: nothing); null: only the host's deny list.
    #[schema(required = true)]
    pub egress_allow: Option<Vec<String>>,
    /// Paused: none of its jobs is claimed; running ones finish (docs/flow-control.md).
    pub paused: bool,
}

impl From<TenantRecord> for TenantView {
    fn from(t: TenantRecord) -> Self {
        let l = t.limits;
        TenantView {
            id: t.id,
            created_at: t.created_at,
            max_payload_bytes: l.max_payload_bytes,
            max_component_bytes: l.max_component_bytes,
            max_timeout_ms: l.max_timeout_ms,
            max_fuel: l.max_fuel,
            max_memory_bytes: l.max_memory_bytes,
            max_output_bytes: l.max_output_bytes,
            max_log_bytes: l.max_log_bytes,
            max_enqueue_per_sec: l.max_enqueue_per_sec,
            enqueue_burst: l.enqueue_burst,
            max_http_requests: l.max_http_requests,
            max_http_request_bytes: l.max_http_request_bytes,
            max_http_response_bytes: l.max_http_response_bytes,
            max_follow_ups: l.max_follow_ups,
            max_follow_up_bytes: l.max_follow_up_bytes,
            max_journal_bytes: l.max_journal_bytes,
            max_attempts_per_day: l.max_attempts_per_day,
            max_fuel_per_day: l.max_fuel_per_day,
            max_egress_bytes_per_day: l.max_egress_bytes_per_day,
            egress_allow: t.egress_allow,
            paused: t.paused,
        }
    }
}

/// An API token, without its secret.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenView {
    /// The token's id (`sluice.api_tokens.id`), used to revoke it.
    #[schema(minimum = 1)]
    pub id: i64,
    /// The tenant it acts for (an admin token may act for any).
    pub tenant: String,
    /// May act for any tenant.
    pub admin: bool,
    /// GET and HEAD only.
    pub read_only: bool,
    /// The label given when it was minted, to tell tokens apart; null if none.
    #[schema(required = true)]
    pub label: Option<String>,
    /// When it was minted.
    pub created_at: DateTime<Utc>,
    /// When it was revoked; null while it still authenticates.
    #[schema(required = true)]
    pub revoked_at: Option<DateTime<Utc>>,
    /// When it last authenticated, to the minute (null: never).
    #[schema(required = true)]
    pub last_used_at: Option<DateTime<Utc>>,
}

impl From<TokenRecord> for TokenView {
    fn from(t: TokenRecord) -> Self {
        TokenView {
            id: t.id,
            tenant: t.tenant,
            admin: t.admin,
            read_only: t.read_only,
            label: t.label,
            created_at: t.created_at,
            revoked_at: t.revoked_at,
            last_used_at: t.last_used_at,
        }
    }
}

/// A token just minted: its fields and the bearer token, shown this once.
#[derive(Debug, Serialize)]
pub struct NewTokenView {
    /// The token's fields (inline).
    #[serde(flatten)]
    pub record: TokenView,
    /// The bearer token (`sluice_…`); not recoverable.
    pub token: String,
}

impl From<NewToken> for NewTokenView {
    fn from(t: NewToken) -> Self {
        NewTokenView {
            record: t.record.into(),
            token: t.token,
        }
    }
}

#[cfg(test)]
mod tests {
    use sluice_store::TenantLimits;

    use super::*;
    use crate::schemas::tests::{keys, properties};

    #[test]
    fn a_tenant_shows_every_cap_flat_beside_its_id() {
        let record = TenantRecord {
            id: "acme".into(),
            created_at: Utc::now(),
            limits: TenantLimits {
                max_payload_bytes: Some(1024),
                max_follow_up_bytes: Some(7),
                ..Default::default()
            },
            egress_allow: Some(vec![]),
            paused: true,
        };
        let value = serde_json::to_value(TenantView::from(record)).unwrap();
        assert_eq!(keys(&value), properties::<TenantView>());
        assert_eq!(value["max_payload_bytes"], 1024);
        assert_eq!(value["max_follow_up_bytes"], 7);
        assert_eq!(value["max_fuel"], serde_json::Value::Null);
        assert_eq!(value["egress_allow"], serde_json::json!([]));
        assert_eq!(value["paused"], true);
    }
}
