//! Outbound HTTP grants between what is stored and what an attempt gets: allow lists are
//! parsed and normalised before they are stored (`sluice types set --allow-http`,
//! `sluice tenants egress`, the HTTP API), checked against the tenant's bound, and turned
//! into the [`HttpGrant`] of one attempt from the job type's row, the tenant's caps and
//! bound, and the host defaults ([`http_grant`]), or from flags alone for an attempt run
//! with no database (`sluice run`, [`local_grant`]).
//!
//! Owns the allow-list syntax errors users see, the default HTTP limits, and
//! [`set_job_type`], the one way the CLI and the API register a type (one read of the
//! tenant for its bound and caps, then the upsert). Speaks no SQL and opens no socket;
//! the sandbox and `sluice-egress` enforce the grant.

use std::sync::Arc;
use std::time::Duration;

use sluice_egress::{AllowList, Grant, Limits as EgressLimits, NetworkPolicy};
use sluice_sandbox::HttpGrant;
use sluice_store::{
    HttpSpec, JobTypeRecord, JobTypeSpec, Store, StoreError, TenantLimits, TenantRecord,
};
use tracing::warn;

/// Requests one attempt may start when neither the type nor the tenant says.
pub const DEFAULT_MAX_REQUESTS: u32 = 20;

/// A malformed or out-of-bound allow list, naming the entry.
#[derive(Debug, thiserror::Error)]
pub enum AllowListError {
    /// An entry is not `scheme://host[:port]` (or names a private address no opened network
    /// covers): fix the entry.
    #[error("{field}: `{entry}` is not a valid destination: {problem}")]
    Malformed {
        /// The request field the list came in (`allow_http`, `--allow-http`).
        field: &'static str,
        /// The entry as written.
        entry: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The list grants more than the tenant's egress bound: narrow it, or have an operator
    /// widen the bound.
    #[error(
        "{field}: `{entry}` is outside what tenant `{tenant}` may grant ({bound}); ask an operator to widen it (sluice tenants egress)"
    )]
    OutsideBound {
        /// The request field the list came in.
        field: &'static str,
        /// The first entry outside the bound (every entry, joined, when the bound no longer
        /// parses).
        entry: String,
        /// The tenant whose bound it is.
        tenant: String,
        /// The bound's entries, joined with `, `.
        bound: String,
    },
}

impl AllowListError {
    /// The request field the error is about.
    pub fn field(&self) -> &'static str {
        match self {
            AllowListError::Malformed { field, .. }
            | AllowListError::OutsideBound { field, .. } => field,
        }
    }
}

/// Why a job type was not registered.
#[derive(Debug, thiserror::Error)]
pub enum SetTypeError {
    /// The allow list is malformed or outside the tenant's bound; nothing was written.
    #[error(transparent)]
    AllowList(#[from] AllowListError),
    /// The store refused the type (unknown tenant or component, a limit over the tenant's
    /// caps, a bad secret name) or could not be reached.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Registers `spec` (its allow list as the user wrote it, named `field` in errors): the
/// list is normalised and checked against the tenant's bound, the granted secret names
/// checked and deduplicated (a grant names secrets of `spec.tenant` only: it resolves
/// inside the job's tenant), the limits against the tenant's caps, with the tenant read
/// once; nothing is written when a check fails.
pub async fn set_job_type(
    store: &Store,
    mut spec: JobTypeSpec,
    field: &'static str,
    networks: &NetworkPolicy,
) -> Result<JobTypeRecord, SetTypeError> {
    spec.http.allow = normalise(field, &spec.http.allow, networks)?;
    spec.secrets = crate::secrets::normalise_grants(&spec.secrets)?;
    let tenant = store
        .get_tenant(&spec.tenant)
        .await?
        .ok_or_else(|| StoreError::UnknownTenant(spec.tenant.clone()))?;
    check_within(&spec.http.allow, &tenant, networks)?;
    tenant.limits.check_job_type(&spec)?;
    Ok(store.set_job_type(&spec).await?)
}

/// Parses `entries` (an IP literal only inside a network the operator opened) and returns
/// their canonical text (`https://api.example.com:443`), duplicates removed, in order.
pub fn normalise(
    field: &'static str,
    entries: &[String],
    networks: &NetworkPolicy,
) -> Result<Vec<String>, AllowListError> {
    let list = AllowList::parse_with(entries, networks).map_err(|e| AllowListError::Malformed {
        field,
        entry: e.entry,
        problem: e.problem,
    })?;
    let mut out: Vec<String> = Vec::with_capacity(list.entries().len());
    for entry in list.entries() {
        let text = entry.to_string();
        if !out.contains(&text) {
            out.push(text);
        }
    }
    Ok(out)
}

/// `Ok` when every entry of a job type's (normalised) list is inside the tenant's bound.
fn check_within(
    allow: &[String],
    tenant: &TenantRecord,
    networks: &NetworkPolicy,
) -> Result<(), AllowListError> {
    let Some(bound) = &tenant.egress_allow else {
        return Ok(());
    };
    if allow.is_empty() {
        return Ok(());
    }
    let field = "allow_http";
    let parse = |entries: &[String]| AllowList::parse_with(entries, networks);
    let (Ok(list), Ok(bound_list)) = (parse(allow), parse(bound)) else {
        // Normalised entries parse; a bound that no longer does grants nothing.
        return Err(AllowListError::OutsideBound {
            field,
            entry: allow.join(", "),
            tenant: tenant.id.clone(),
            bound: bound.join(", "),
        });
    };
    list.check_within(&bound_list)
        .map_err(|e| AllowListError::OutsideBound {
            field,
            entry: e.entry,
            tenant: tenant.id.clone(),
            bound: if bound.is_empty() {
                "nothing".to_owned()
            } else {
                bound.join(", ")
            },
        })
}

/// What a webhook delivery of `tenant` may reach: any http(s) destination the deny list
/// leaves, inside the tenant's bound when the operator set one (entries that no longer
/// parse here grant nothing), with the default limits.
pub fn webhook_grant(tenant: &TenantRecord, networks: &NetworkPolicy) -> Grant {
    let bound = tenant.egress_allow.as_deref().map(|entries| {
        let good: Vec<&String> = entries
            .iter()
            .filter(|e| AllowList::parse_with([e.as_str()], networks).is_ok())
            .collect();
        AllowList::parse_with(good, networks).unwrap_or_default()
    });
    Grant {
        allow: AllowList::any_destination(),
        bound,
        limits: EgressLimits::default(),
    }
}

/// The grant of one attempt of `record`'s type, or `None` when the type may call nothing.
/// Entries that no longer parse here (say, an IP literal whose network this host did not
/// open) are left out, with a warning: denied, never widened.
pub fn http_grant(
    record: &JobTypeRecord,
    tenant: &TenantRecord,
    networks: &NetworkPolicy,
) -> Option<Arc<HttpGrant>> {
    if record.http_allow.is_empty() {
        return None;
    }
    let parse_each = |entries: &[String]| {
        let good: Vec<&String> = entries
            .iter()
            .filter(|e| match AllowList::parse_with([e.as_str()], networks) {
                Ok(_) => true,
                Err(error) => {
                    warn!(
                        tenant = %record.tenant, r#type = %record.name, entry = %e,
                        problem = %error.problem, "allow-list entry not granted on this host"
                    );
                    false
                }
            })
            .collect();
        AllowList::parse_with(good, networks).unwrap_or_default()
    };
    let allow = parse_each(&record.http_allow);
    let bound = tenant.egress_allow.as_deref().map(parse_each);
    let stored = StoredLimits {
        max_requests: record.http_max_requests.map(i64::from),
        request_bytes: record.http_request_bytes,
        response_bytes: record.http_response_bytes,
        connect_timeout_ms: record.http_connect_timeout_ms,
        first_byte_timeout_ms: record.http_first_byte_timeout_ms,
        between_bytes_timeout_ms: record.http_between_bytes_timeout_ms,
    };
    Some(grant_of(allow, bound, &stored, &tenant.limits))
}

/// The grant of one attempt run outside any tenant and database (`sluice run`): `spec`'s
/// allow list (named `field` in errors; a malformed entry is refused, not left out) with
/// its limits over the host defaults, and no tenant bound or caps. `None` when the list
/// is empty: the attempt may call nothing.
pub fn local_grant(
    spec: &HttpSpec,
    field: &'static str,
    networks: &NetworkPolicy,
) -> Result<Option<Arc<HttpGrant>>, AllowListError> {
    let entries = normalise(field, &spec.allow, networks)?;
    if entries.is_empty() {
        return Ok(None);
    }
    let allow =
        AllowList::parse_with(&entries, networks).map_err(|e| AllowListError::Malformed {
            field,
            entry: e.entry,
            problem: e.problem,
        })?;
    let bytes = |v: Option<u64>| v.map(|v| i64::try_from(v).unwrap_or(i64::MAX));
    let ms = |d: Option<Duration>| d.map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let stored = StoredLimits {
        max_requests: spec.max_requests.map(i64::from),
        request_bytes: bytes(spec.request_bytes),
        response_bytes: bytes(spec.response_bytes),
        connect_timeout_ms: ms(spec.connect_timeout),
        first_byte_timeout_ms: ms(spec.first_byte_timeout),
        between_bytes_timeout_ms: ms(spec.between_bytes_timeout),
    };
    Ok(Some(grant_of(
        allow,
        None,
        &stored,
        &TenantLimits::default(),
    )))
}

/// A job type's HTTP limits as stored (`None`: the host default).
struct StoredLimits {
    max_requests: Option<i64>,
    request_bytes: Option<i64>,
    response_bytes: Option<i64>,
    connect_timeout_ms: Option<i64>,
    first_byte_timeout_ms: Option<i64>,
    between_bytes_timeout_ms: Option<i64>,
}

/// The grant of `allow` within `bound`: the type's limits over the host defaults, each
/// under the tenant's cap.
fn grant_of(
    allow: AllowList,
    bound: Option<AllowList>,
    stored: &StoredLimits,
    caps: &TenantLimits,
) -> Arc<HttpGrant> {
    let min = |value: Option<i64>, cap: Option<i64>, default: u64| -> u64 {
        let v = value.map_or(default, |v| v.max(0) as u64);
        cap.map_or(v, |c| v.min(c.max(0) as u64))
    };
    let defaults = EgressLimits::default();
    let timeout = |ms: Option<i64>, default: Duration| {
        ms.map_or(default, |ms| Duration::from_millis(ms.max(1) as u64))
    };
    let limits = EgressLimits {
        connect_timeout: timeout(stored.connect_timeout_ms, defaults.connect_timeout),
        first_byte_timeout: timeout(stored.first_byte_timeout_ms, defaults.first_byte_timeout),
        between_bytes_timeout: timeout(
            stored.between_bytes_timeout_ms,
            defaults.between_bytes_timeout,
        ),
        max_request_body_bytes: min(
            stored.request_bytes,
            caps.max_http_request_bytes,
            defaults.max_request_body_bytes,
        ),
        max_response_body_bytes: min(
            stored.response_bytes,
            caps.max_http_response_bytes,
            defaults.max_response_body_bytes,
        ),
        ..defaults
    };
    let max_requests = min(
        stored.max_requests,
        caps.max_http_requests.map(i64::from),
        u64::from(DEFAULT_MAX_REQUESTS),
    );
    Arc::new(HttpGrant {
        grant: Grant {
            allow,
            bound,
            limits,
        },
        max_requests: u32::try_from(max_requests).unwrap_or(u32::MAX),
        recorded: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    fn tenant(bound: Option<&[&str]>, limits: TenantLimits) -> TenantRecord {
        TenantRecord {
            id: "acme".into(),
            created_at: Utc::now(),
            limits,
            egress_allow: bound.map(|b| b.iter().map(|s| s.to_string()).collect()),
            paused: false,
        }
    }

    fn record(allow: &[&str]) -> JobTypeRecord {
        JobTypeRecord {
            tenant: "acme".into(),
            name: "call".into(),
            component_id: 1,
            max_attempts: 3,
            backoff_base_ms: None,
            backoff_cap_ms: None,
            backoff_jitter: None,
            timeout_ms: None,
            fuel: None,
            memory_bytes: None,
            output_bytes: None,
            log_bytes: None,
            http_allow: allow.iter().map(|s| s.to_string()).collect(),
            http_max_requests: Some(50),
            http_request_bytes: None,
            http_response_bytes: Some(1 << 30),
            http_connect_timeout_ms: Some(1500),
            http_first_byte_timeout_ms: None,
            http_between_bytes_timeout_ms: None,
            secrets: Vec::new(),
            durable: false,
            journal_bytes: None,
            created_at: Utc::now(),
            updated_at: Utc::now(),
            flow: Default::default(),
        }
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn entries_are_normalised_deduplicated_and_malformed_ones_named() {
        let none = NetworkPolicy::default();
        let got = normalise(
            "allow_http",
            &strings(&["HTTPS://API.example.com", "https://api.example.com:443/"]),
            &none,
        )
        .unwrap();
        assert_eq!(got, ["https://api.example.com:443"]);
        for bad in [
            "ftp://x",
            "https://",
            "https://*.",
            "https://a.com/path",
            "http://10.0.0.1",
        ] {
            let err = normalise("allow_http", &strings(&[bad]), &none).unwrap_err();
            assert!(err.to_string().contains(bad), "{bad}: {err}");
            assert_eq!(err.field(), "allow_http");
        }
        // An IP literal only inside an opened network.
        let lo = NetworkPolicy::parse(["127.0.0.1/32"]).unwrap();
        assert!(normalise("allow_http", &strings(&["http://127.0.0.1:8080"]), &lo).is_ok());
    }

    #[test]
    fn a_type_list_must_stay_inside_the_tenant_bound() {
        let none = NetworkPolicy::default();
        let bounded = tenant(
            Some(&["https://*.example.com:443"]),
            TenantLimits::default(),
        );
        let inside =
            normalise("allow_http", &strings(&["https://api.example.com"]), &none).unwrap();
        assert!(check_within(&inside, &bounded, &none).is_ok());
        let outside = normalise("allow_http", &strings(&["https://evil.test"]), &none).unwrap();
        let err = check_within(&outside, &bounded, &none).unwrap_err();
        assert!(err.to_string().contains("evil.test"), "{err}");
        let unbounded = tenant(None, TenantLimits::default());
        assert!(check_within(&outside, &unbounded, &none).is_ok());
    }

    #[test]
    fn the_grant_takes_type_limits_under_tenant_caps_and_carries_the_bound() {
        let none = NetworkPolicy::default();
        assert!(http_grant(&record(&[]), &tenant(None, TenantLimits::default()), &none).is_none());
        let caps = TenantLimits {
            max_http_requests: Some(5),
            max_http_response_bytes: Some(1024),
            ..TenantLimits::default()
        };
        let t = tenant(Some(&["https://*.example.com:443"]), caps);
        let grant = http_grant(&record(&["https://api.example.com:443"]), &t, &none).unwrap();
        assert_eq!(grant.max_requests, 5);
        assert_eq!(grant.grant.limits.max_response_body_bytes, 1024);
        assert_eq!(
            grant.grant.limits.max_request_body_bytes,
            EgressLimits::default().max_request_body_bytes
        );
        assert!(grant.grant.allow.permits("https", "api.example.com", 443));
        // The type's timeout caps replace the host's; the unset ones stay.
        assert_eq!(
            grant.grant.limits.connect_timeout,
            Duration::from_millis(1500)
        );
        assert_eq!(
            grant.grant.limits.first_byte_timeout,
            EgressLimits::default().first_byte_timeout
        );
        assert!(grant.grant.bound.is_some());
        // A stored IP literal whose network this host did not open is left out.
        let grant = http_grant(&record(&["http://127.0.0.1:8080"]), &t, &none).unwrap();
        assert!(grant.grant.allow.is_empty());
    }

    #[test]
    fn a_local_grant_takes_the_flags_over_the_defaults_and_refuses_a_bad_entry() {
        let lo = NetworkPolicy::parse(["127.0.0.1/32"]).unwrap();
        assert!(
            local_grant(&HttpSpec::default(), "--allow-http", &lo)
                .unwrap()
                .is_none()
        );
        let spec = HttpSpec {
            allow: strings(&["http://127.0.0.1:8080", "http://127.0.0.1:8080/"]),
            max_requests: Some(3),
            connect_timeout: Some(Duration::from_millis(250)),
            ..HttpSpec::default()
        };
        let grant = local_grant(&spec, "--allow-http", &lo).unwrap().unwrap();
        assert_eq!(grant.max_requests, 3);
        assert_eq!(grant.grant.allow.entries().len(), 1);
        assert!(grant.grant.bound.is_none());
        assert_eq!(
            grant.grant.limits.connect_timeout,
            Duration::from_millis(250)
        );
        assert_eq!(
            grant.grant.limits.max_response_body_bytes,
            EgressLimits::default().max_response_body_bytes
        );
        // Outside an opened network an IP literal is refused, naming it.
        let err = local_grant(&spec, "--allow-http", &NetworkPolicy::default()).unwrap_err();
        assert!(err.to_string().contains("127.0.0.1"), "{err}");
    }
}
