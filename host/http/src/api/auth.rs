//! Who is calling: the `Caller` extractor turns `Authorization: Bearer <token>` (and,
//! for admin tokens, `X-Sluice-Tenant`) into the tenant a request acts for, with that
//! tenant's limits.
//!
//! Owns: the authentication and tenant-selection rules, and the one rule of read-only
//! tokens (GET and HEAD only). Must not: authorise anything beyond "which tenant" and
//! "may it write": handlers pass `caller.tenant` to every store call, and the store
//! scopes every statement by it.

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, StatusCode};
use sluice_store::{TenantLimits, token_hash};

use super::error::ApiError;
use super::rate_limit::default_burst;
use super::state::{AppState, ENV_ADMIN_HOME_TENANT};

/// Header an admin token uses to pick the tenant it acts for.
pub const TENANT_HEADER: &str = "x-sluice-tenant";

/// The authenticated caller of a request.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The tenant this request acts for; every store call is scoped to it.
    pub tenant: String,
    pub limits: TenantLimits,
    /// An admin token (may act for any tenant).
    pub admin: bool,
}

impl Caller {
    /// Takes `jobs` enqueue tokens from this tenant's bucket, or a 429 with Retry-After.
    pub fn take_enqueue_tokens(&self, state: &AppState, jobs: usize) -> Result<(), ApiError> {
        let Some(rate) = self.limits.max_enqueue_per_sec else {
            return Ok(());
        };
        let burst = self
            .limits
            .enqueue_burst
            .map_or_else(|| default_burst(rate), f64::from);
        state
            .rate_limiter()
            .try_take(&self.tenant, jobs, rate, burst)
            .map_err(|refusal| {
                let secs = refusal.retry_after.as_secs_f64().ceil() as u64;
                let message = if refusal.over_burst {
                    format!(
                        "{jobs} jobs in one request is more than tenant {:?}'s burst of {burst}; \
                         split the batch",
                        self.tenant
                    )
                } else {
                    format!(
                        "tenant {:?} is over its enqueue rate of {rate}/s (burst {burst}); \
                         retry after {secs} s",
                        self.tenant
                    )
                };
                ApiError::rate_limited(message, secs)
            })
    }
}

fn bearer(headers: &HeaderMap) -> Result<&str, ApiError> {
    let value = headers.get(AUTHORIZATION).ok_or_else(|| {
        ApiError::unauthorized("missing token: send `Authorization: Bearer <token>`")
    })?;
    let value = value
        .to_str()
        .map_err(|_| ApiError::unauthorized("the Authorization header is not ASCII"))?;
    match value.split_once(' ') {
        Some((scheme, token))
            if scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty() =>
        {
            Ok(token.trim())
        }
        _ => Err(ApiError::unauthorized(
            "the Authorization header must be `Bearer <token>`",
        )),
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let token = bearer(&parts.headers)?;
        let (home, admin, read_only) = if state.is_env_admin_token(&token_hash(token)) {
            (ENV_ADMIN_HOME_TENANT.to_owned(), true, false)
        } else {
            match state.store().authenticate(token).await? {
                Some(identity) => (identity.tenant, identity.admin, identity.read_only),
                None => return Err(ApiError::unauthorized("unknown or revoked token")),
            }
        };
        // Every route authenticates here, so this one check covers the whole API: a
        // read-only token reads and never changes anything.
        if read_only && !matches!(parts.method, Method::GET | Method::HEAD) {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "read_only_token",
                format!(
                    "this token is read-only: {} is refused (mint a token without --read-only to change things)",
                    parts.method
                ),
            ));
        }
        let asked =
            match parts.headers.get(TENANT_HEADER) {
                Some(value) => Some(value.to_str().map_err(|_| {
                    ApiError::bad_request("the X-Sluice-Tenant header is not ASCII")
                })?),
                None => None,
            };
        let tenant = match asked {
            Some(asked) if asked != home && !admin => {
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "forbidden",
                    "only an admin token can act for another tenant (X-Sluice-Tenant)",
                ));
            }
            Some(asked) => asked.to_owned(),
            None => home,
        };
        let record = state
            .store()
            .get_tenant(&tenant)
            .await?
            .ok_or_else(|| ApiError::not_found(format!("tenant {tenant:?} not found")))?;
        Ok(Caller {
            tenant,
            limits: record.limits,
            admin,
        })
    }
}

/// Middleware for `/metrics` under `sluice serve --metrics-auth`: only an admin token
/// passes (metrics cover every tenant).
pub async fn require_admin(
    axum::extract::State(state): axum::extract::State<AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Result<axum::response::Response, ApiError> {
    let (mut parts, body) = request.into_parts();
    let caller = Caller::from_request_parts(&mut parts, &state).await?;
    if !caller.admin {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "/metrics needs an admin token (sluice serve --metrics-auth)",
        ));
    }
    Ok(next
        .run(axum::extract::Request::from_parts(parts, body))
        .await)
}
