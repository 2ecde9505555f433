//! Dashboard sessions (`/ui` on `sluice serve`): a signed-in browser's row.
//!
//! Owns: every statement on `sluice.ui_sessions` (migration 0019): creating a session
//! from an authenticated identity, looking one up by its cookie secret, switching the
//! tenant an admin session acts for, and signing out. The cookie secret and the CSRF
//! token are 32 bytes from the OS's CSPRNG each, as hex; only the secret's SHA-256 is
//! stored (a fast hash, for the reason given in `tokens.rs`).
//!
//! Must not: keep or log the cookie secret, print the CSRF token (`Debug` leaves it out),
//! or decide what a session may do (the UI does, from `admin` and `read_only`). A session
//! made from an API token never outlives the token's revocation: every lookup checks it.

use std::time::Duration;

use chrono::{DateTime, Utc};
use rand::TryRngCore as _;

use crate::tokens::token_hash;
use crate::{Store, StoreError, micros, text};

/// Who signs in: the identity an API token (or the process's environment admin token)
/// authenticated as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UiIdentity {
    /// The API token's id; `None` for the environment admin token.
    pub token_id: Option<i64>,
    /// SHA-256 of the environment admin token (with `token_id: None`), so the UI can
    /// check a session against the token the serving process holds now.
    pub env_admin_hash: Option<[u8; 32]>,
    /// The identity's own tenant: the session acts for it at first.
    pub tenant: String,
    /// An admin identity: the session may switch the tenant it acts for.
    pub admin: bool,
    /// A read-only identity: the session's forms that change state are refused.
    pub read_only: bool,
}

/// A live dashboard session. `Debug` leaves the CSRF token out.
#[derive(Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct UiSession {
    /// The session's id (`sluice.ui_sessions.id`); the cookie carries a secret, not this.
    pub id: i64,
    /// The API token it was made from; `None` for the environment admin token.
    pub token_id: Option<i64>,
    /// SHA-256 (32 bytes) of the environment admin token it was made from, with `token_id:
    /// None`.
    pub env_admin_hash: Option<Vec<u8>>,
    /// The identity's tenant.
    pub home_tenant: String,
    /// The tenant the pages show and act on (only an admin session may change it).
    pub acting_tenant: String,
    /// Made from an admin identity.
    pub admin: bool,
    /// Made from a read-only identity.
    pub read_only: bool,
    /// What every state-changing form must send back.
    pub csrf_token: String,
    /// When it stops being accepted: its creation plus the `ttl` it was made with (the
    /// database's clock).
    pub expires_at: DateTime<Utc>,
}

impl std::fmt::Debug for UiSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UiSession")
            .field("id", &self.id)
            .field("token_id", &self.token_id)
            .field(
                "env_admin_hash",
                &self.env_admin_hash.as_ref().map(hex::encode),
            )
            .field("home_tenant", &self.home_tenant)
            .field("acting_tenant", &self.acting_tenant)
            .field("admin", &self.admin)
            .field("read_only", &self.read_only)
            .field("csrf_token", &"<redacted>")
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// Inserts the session (and sweeps up to 1000 expired ones); no row when the tenant is
/// unknown or the token is revoked or not the identity it claims.
const CREATE_SESSION: &str = include_str!("../sql/ui_sessions/create.sql");
const GET_SESSION: &str = include_str!("../sql/ui_sessions/get.sql");
/// Guarded on an admin session and an existing tenant.
const SET_SESSION_TENANT: &str = include_str!("../sql/ui_sessions/set_tenant.sql");
const DELETE_SESSION: &str = include_str!("../sql/ui_sessions/delete.sql");
const TENANT_EXISTS: &str = include_str!("../sql/tenants/exists.sql");

/// 32 bytes from the OS's CSPRNG, as 64 hex digits.
fn random_hex(field: &'static str) -> Result<String, StoreError> {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng
        .try_fill_bytes(&mut bytes)
        .map_err(|e| StoreError::InvalidInput {
            field,
            message: format!("the operating system's random source failed: {e}"),
        })?;
    Ok(hex::encode(bytes))
}

impl Store {
    /// Signs `identity` in for `ttl`: returns the cookie secret (the only copy; 64 hex
    /// digits) and the session, acting for the identity's tenant. Refuses an identity
    /// with both or neither of `token_id` and `env_admin_hash` (`InvalidInput`), an
    /// unknown tenant (`UnknownTenant`), and a revoked token or one that is not this
    /// identity (`NotFound` naming the token). Also deletes up to 1000 expired sessions.
    pub async fn create_ui_session(
        &self,
        identity: &UiIdentity,
        ttl: Duration,
    ) -> Result<(String, UiSession), StoreError> {
        if identity.token_id.is_some() == identity.env_admin_hash.is_some() {
            return Err(StoreError::InvalidInput {
                field: "identity",
                message: "a session is made from exactly one of an API token (token_id) and \
                          the environment admin token (env_admin_hash)"
                    .into(),
            });
        }
        if !text::findable(&identity.tenant) {
            return Err(StoreError::UnknownTenant(identity.tenant.clone()));
        }
        let ttl_us = micros("ttl", ttl, true)?;
        let secret = random_hex("session secret")?;
        let csrf = random_hex("csrf token")?;
        let session: Option<UiSession> = sqlx::query_as(CREATE_SESSION)
            .bind(&token_hash(&secret)[..])
            .bind(identity.token_id)
            .bind(identity.env_admin_hash.as_ref().map(|h| &h[..]))
            .bind(&identity.tenant)
            .bind(identity.admin)
            .bind(identity.read_only)
            .bind(&csrf)
            .bind(ttl_us)
            .fetch_optional(&self.pool)
            .await?;
        if let Some(session) = session {
            return Ok((secret, session));
        }
        let tenant_exists: bool = sqlx::query_scalar(TENANT_EXISTS)
            .bind(&identity.tenant)
            .fetch_one(&self.pool)
            .await?;
        Err(match identity.token_id {
            Some(id) if tenant_exists => StoreError::NotFound {
                entity: "token",
                id: format!("{id} (revoked, or not a token of this identity)"),
            },
            _ => StoreError::UnknownTenant(identity.tenant.clone()),
        })
    }

    /// The live session behind a cookie secret; `None` when it is unknown, expired, or
    /// made from an API token that has been revoked since.
    pub async fn ui_session(&self, secret: &str) -> Result<Option<UiSession>, StoreError> {
        Ok(sqlx::query_as(GET_SESSION)
            .bind(&token_hash(secret)[..])
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Makes an admin session act for `tenant`. An unknown tenant is `UnknownTenant`; a
    /// session that is not an admin one is refused (`InvalidInput`), and an unknown or
    /// expired one is `NotFound`.
    pub async fn set_ui_session_tenant(
        &self,
        session_id: i64,
        tenant: &str,
    ) -> Result<(), StoreError> {
        if !text::findable(tenant) {
            return Err(StoreError::UnknownTenant(tenant.to_owned()));
        }
        let (tenant_exists, admin, changed): (bool, Option<bool>, bool) =
            sqlx::query_as(SET_SESSION_TENANT)
                .bind(session_id)
                .bind(tenant)
                .fetch_one(&self.pool)
                .await?;
        match (changed, tenant_exists, admin) {
            (true, _, _) => Ok(()),
            (false, false, _) => Err(StoreError::UnknownTenant(tenant.to_owned())),
            (false, true, None) => Err(StoreError::NotFound {
                entity: "ui session",
                id: session_id.to_string(),
            }),
            (false, true, Some(_)) => Err(StoreError::InvalidInput {
                field: "tenant",
                message: format!(
                    "only an admin session may act for another tenant (asked for {tenant:?})"
                ),
            }),
        }
    }

    /// Signs out: deletes the session behind a cookie secret (nothing when unknown).
    pub async fn delete_ui_session(&self, secret: &str) -> Result<(), StoreError> {
        sqlx::query(DELETE_SESSION)
            .bind(&token_hash(secret)[..])
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
