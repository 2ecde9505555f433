//! API tokens: minting, authenticating, listing and revoking.
//!
//! Owns: every statement on `sluice.api_tokens` (with when each token was last used),
//! and the token format. A token is `sluice_` followed by 64 hex digits (32 bytes from
//! the OS's CSPRNG); it is returned once by [`Store::create_token`] and only its SHA-256
//! is stored. A fast hash is the right choice for secrets with 256 bits of entropy: there
//! is no dictionary to try, so a slow password hash would buy nothing and cost a
//! bcrypt-sized delay on every request.
//!
//! Must not: keep, log or return a token in clear after creation; decide what a token may
//! do (the HTTP layer does: a tenant token acts for its tenant, an admin token for any,
//! a read-only one only reads).

use chrono::{DateTime, Utc};
use rand::TryRngCore as _;
use sha2::{Digest, Sha256};

use crate::validate::validate_tenant_id;
use crate::{Store, StoreError, text};

/// What every token starts with, so a leaked one is recognisable (secret scanners).
pub const TOKEN_PREFIX: &str = "sluice_";

/// A stored token, without any secret.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct TokenRecord {
    /// The token's id (`sluice.api_tokens.id`): how it is listed and revoked.
    pub id: i64,
    /// The tenant it acts for (an admin token may act for any).
    pub tenant: String,
    /// May act for any tenant (and pass the admin-only checks, such as `/metrics` when it
    /// requires an admin).
    pub admin: bool,
    /// GET and HEAD only: every other request is refused (403).
    pub read_only: bool,
    /// The label given at minting, to tell tokens apart; `None` if none.
    pub label: Option<String>,
    /// When it was minted.
    pub created_at: DateTime<Utc>,
    /// When it was revoked; `None` while it authenticates.
    pub revoked_at: Option<DateTime<Utc>>,
    /// When the token last authenticated, to the minute (`None`: never). Written by
    /// [`Store::authenticate`] at most once a minute per token.
    pub last_used_at: Option<DateTime<Utc>>,
}

/// A freshly minted token: the only time the secret exists outside the caller's hands.
#[derive(Clone, Debug)]
pub struct NewToken {
    /// The stored row, as listed from now on.
    pub record: TokenRecord,
    /// The bearer token. Shown once; not recoverable.
    pub token: String,
}

/// The result of authenticating a bearer token.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct TokenIdentity {
    /// The id of the token that authenticated.
    pub token_id: i64,
    /// The token's tenant: what a non-admin token may act for.
    pub tenant: String,
    /// An admin token: it may act for any tenant.
    pub admin: bool,
    /// The HTTP layer refuses this token every request that could change state.
    pub read_only: bool,
}

/// SHA-256 of a token as stored in `api_tokens.token_hash`.
pub fn token_hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn mint() -> Result<String, StoreError> {
    let mut secret = [0u8; 32];
    rand::rngs::OsRng
        .try_fill_bytes(&mut secret)
        .map_err(|e| StoreError::InvalidInput {
            field: "token",
            message: format!("the operating system's random source failed: {e}"),
        })?;
    Ok(format!("{TOKEN_PREFIX}{}", hex::encode(secret)))
}

/// Inserts only when the tenant exists (no row otherwise: reported as an unknown tenant).
const INSERT_TOKEN: &str = include_str!("../sql/tokens/insert.sql");
const AUTHENTICATE: &str = include_str!("../sql/tokens/authenticate.sql");
const LIST_TOKENS: &str = include_str!("../sql/tokens/list.sql");
/// Scoped by tenant; revoking twice keeps the first revocation time.
const REVOKE_TOKEN: &str = include_str!("../sql/tokens/revoke.sql");
const PING: &str = include_str!("../sql/ping.sql");

impl Store {
    /// Mints a token for `tenant` (an admin token when `admin`). The returned
    /// [`NewToken::token`] is the only copy of the secret.
    pub async fn create_token(
        &self,
        tenant: &str,
        admin: bool,
        label: Option<&str>,
    ) -> Result<NewToken, StoreError> {
        self.create_token_with(tenant, admin, false, label).await
    }

    /// [`Store::create_token`], read-only when `read_only` (GET and HEAD only).
    pub async fn create_token_with(
        &self,
        tenant: &str,
        admin: bool,
        read_only: bool,
        label: Option<&str>,
    ) -> Result<NewToken, StoreError> {
        validate_tenant_id(tenant).map_err(|_| StoreError::UnknownTenant(tenant.to_owned()))?;
        if let Some(label) = label {
            let n = label.chars().count();
            if n == 0 || n > 128 {
                return Err(StoreError::InvalidInput {
                    field: "label",
                    message: format!("must be 1 to 128 characters, got {n}"),
                });
            }
            text::check("label", label)?;
        }
        let token = mint()?;
        let record: Option<TokenRecord> = sqlx::query_as(INSERT_TOKEN)
            .bind(tenant)
            .bind(&token_hash(&token)[..])
            .bind(admin)
            .bind(label)
            .bind(read_only)
            .fetch_optional(&self.pool)
            .await?;
        let record = record.ok_or_else(|| StoreError::UnknownTenant(tenant.to_owned()))?;
        Ok(NewToken { record, token })
    }

    /// The identity behind a bearer token, or `None` for an unknown or revoked token.
    /// One round trip; it also records the use (`last_used_at`), writing at most once a
    /// minute per token.
    pub async fn authenticate(&self, token: &str) -> Result<Option<TokenIdentity>, StoreError> {
        Ok(sqlx::query_as(AUTHENTICATE)
            .bind(&token_hash(token)[..])
            .fetch_optional(&self.pool)
            .await?)
    }

    /// The tokens of a tenant (revoked ones too), oldest first. No secrets.
    pub async fn list_tokens(&self, tenant: &str) -> Result<Vec<TokenRecord>, StoreError> {
        if !text::findable(tenant) {
            return Ok(Vec::new());
        }
        Ok(sqlx::query_as(LIST_TOKENS)
            .bind(tenant)
            .fetch_all(&self.pool)
            .await?)
    }

    /// Revokes a tenant's token by id; requests with it get 401 from then on.
    pub async fn revoke_token(&self, tenant: &str, id: i64) -> Result<TokenRecord, StoreError> {
        sqlx::query_as(REVOKE_TOKEN)
            .bind(id)
            .bind(text::lossy(tenant).as_ref())
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| StoreError::NotFound {
                entity: "token",
                id: id.to_string(),
            })
    }

    /// Checks that the database answers (for `/healthz`).
    pub async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query(PING).execute(&self.pool).await?;
        Ok(())
    }
}
