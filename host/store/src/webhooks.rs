//! Webhook endpoints as stored rows (`sluice.webhook_endpoints`, migration 0016): a
//! tenant's receivers, their event filters, their sealed signing secrets, retry
//! schedules and state.
//!
//! Owns: every statement on the endpoints table (the syntax of event types and filters
//! and the bounds of URLs, schedules and timeouts are `webhook_rules`', checked before
//! each statement). Must not: encrypt, decrypt or see a signing secret (the host seals it with
//! `sluice-secrets`; the store keeps what it is handed), judge a URL's destination (the
//! egress connector does, at send time), or return a row of another tenant than the one
//! asked for.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::validate::validate_tenant_id;
use crate::webhook_rules::{
    DEFAULT_WEBHOOK_TIMEOUT, MAX_ENDPOINTS_PER_TENANT, schedule_ms, timeout_ms, validate_events,
    validate_url,
};
use crate::{Store, StoreError, micros, text};

/// An endpoint as shown: never its secret.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct EndpointInfo {
    /// The endpoint's id (`sluice.webhook_endpoints.id`), shown as `ep_N`.
    pub id: i64,
    /// The tenant whose events it receives.
    pub tenant: String,
    /// Where events are POSTed (`http://` or `https://`, at most [`MAX_URL_LEN`]
    /// characters).
    pub url: String,
    /// Event type patterns it subscribes to: `invoice.paid`, `invoice.*` or `*`.
    pub events: Vec<String>,
    /// Free text from its owner; empty if none.
    pub description: String,
    /// False once disabled (by its owner, or after a 410 Gone): it gets no new deliveries,
    /// and pending ones are cancelled at send time.
    pub enabled: bool,
    /// Why it is disabled (by its owner, or after a 410 Gone).
    pub disabled_reason: Option<String>,
    /// Which operator key sealed its secret (a fingerprint, never the key).
    pub key_id: String,
    /// Retry delays in ms after attempt 1, 2, ... (`None`: the default schedule).
    pub retry_schedule_ms: Option<Vec<i64>>,
    /// Longest time one attempt may take, in milliseconds.
    pub timeout_ms: i32,
    /// While a rotated-out secret still signs beside the current one: until when.
    pub previous_until: Option<DateTime<Utc>>,
    /// When the endpoint was created.
    pub created_at: DateTime<Utc>,
    /// When it was last updated, disabled or had its secret rotated (a rotate-key
    /// re-sealing keeps it).
    pub updated_at: DateTime<Utc>,
}

/// A signing secret sealed by the host, as stored. `Debug` shows no bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct SealedValue {
    /// The id of the operator key that sealed it (16 hex characters).
    pub key_id: String,
    /// The 12-byte AES-GCM nonce of this sealing.
    pub nonce: Vec<u8>,
    /// The sealed secret with its 16-byte tag.
    pub ciphertext: Vec<u8>,
}

impl std::fmt::Debug for SealedValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealedValue")
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

/// A new endpoint. `retry_schedule: None` is the default schedule.
#[derive(Clone, Debug, Default)]
pub struct NewEndpoint {
    /// The tenant that will own it; must exist and have fewer than
    /// [`MAX_ENDPOINTS_PER_TENANT`].
    pub tenant: String,
    /// Where to POST, `http://` or `https://`; the egress policy is applied at send time.
    pub url: String,
    /// Event type patterns: `type`, `prefix.*` or `*`; at least one.
    pub events: Vec<String>,
    /// Free text; empty for none.
    pub description: String,
    /// Delays before retries after attempt 1, 2, …; `None`: [`DEFAULT_RETRY_SCHEDULE`].
    pub retry_schedule: Option<Vec<Duration>>,
    /// Longest time one attempt may take; `None`: [`DEFAULT_WEBHOOK_TIMEOUT`].
    pub timeout: Option<Duration>,
}

/// Fields to change; `None` leaves one as it is. `retry_schedule: Some(None)` goes back
/// to the default schedule.
#[derive(Clone, Debug, Default)]
pub struct EndpointUpdate {
    /// A new URL.
    pub url: Option<String>,
    /// New event type patterns (they replace the old ones).
    pub events: Option<Vec<String>>,
    /// A new description.
    pub description: Option<String>,
    /// `Some(false)` disables it by its owner's choice; `Some(true)` enables it again.
    pub enabled: Option<bool>,
    /// A new retry schedule, or `Some(None)` for the default one.
    pub retry_schedule: Option<Option<Vec<Duration>>>,
    /// A new attempt timeout.
    pub timeout: Option<Duration>,
}

const NEXT_ENDPOINT_ID: &str = include_str!("../sql/webhooks/next_endpoint_id.sql");
const CREATE_ENDPOINT: &str = include_str!("../sql/webhooks/create_endpoint.sql");
const LIST_ENDPOINTS: &str = include_str!("../sql/webhooks/list_endpoints.sql");
const GET_ENDPOINT: &str = include_str!("../sql/webhooks/get_endpoint.sql");
const UPDATE_ENDPOINT: &str = include_str!("../sql/webhooks/update_endpoint.sql");
const DELETE_ENDPOINT: &str = include_str!("../sql/webhooks/delete_endpoint.sql");
const ROTATE_SECRET: &str = include_str!("../sql/webhooks/rotate_secret.sql");
const DISABLE_ENDPOINT: &str = include_str!("../sql/webhooks/disable_endpoint.sql");

fn not_found(id: i64) -> StoreError {
    StoreError::NotFound {
        entity: "webhook endpoint",
        id: format!("ep_{id}"),
    }
}

impl Store {
    /// A fresh endpoint id, to seal the new endpoint's secret under before inserting it.
    pub async fn next_webhook_endpoint_id(&self) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar(NEXT_ENDPOINT_ID)
            .fetch_one(&self.pool)
            .await?)
    }

    /// Checks `spec` and stores it under `id` with its sealed secret.
    pub async fn create_webhook_endpoint(
        &self,
        id: i64,
        spec: &NewEndpoint,
        secret: &SealedValue,
    ) -> Result<EndpointInfo, StoreError> {
        validate_tenant_id(&spec.tenant)
            .map_err(|_| StoreError::UnknownTenant(spec.tenant.clone()))?;
        validate_url(&spec.url)?;
        validate_events(&spec.events)?;
        text::check("description", &spec.description)?;
        let schedule = schedule_ms(spec.retry_schedule.as_deref())?;
        let timeout =
            timeout_ms(spec.timeout)?.unwrap_or(DEFAULT_WEBHOOK_TIMEOUT.as_millis() as i32);
        let row: Option<EndpointInfo> = sqlx::query_as(CREATE_ENDPOINT)
            .bind(id)
            .bind(&spec.tenant)
            .bind(&spec.url)
            .bind(&spec.events)
            .bind(&spec.description)
            .bind(&secret.key_id)
            .bind(&secret.nonce)
            .bind(&secret.ciphertext)
            .bind(schedule)
            .bind(timeout)
            .bind(MAX_ENDPOINTS_PER_TENANT)
            .fetch_optional(&self.pool)
            .await
            .map_err(length_errors)?;
        match row {
            Some(info) => Ok(info),
            None if self.get_tenant(&spec.tenant).await?.is_some() => Err(StoreError::Conflict {
                field: "endpoint",
                message: format!(
                    "tenant {:?} already has {MAX_ENDPOINTS_PER_TENANT} webhook endpoints, the most it may have: delete one first",
                    spec.tenant
                ),
            }),
            None => Err(StoreError::UnknownTenant(spec.tenant.clone())),
        }
    }

    /// A tenant's endpoints, oldest first.
    pub async fn list_webhook_endpoints(
        &self,
        tenant: &str,
    ) -> Result<Vec<EndpointInfo>, StoreError> {
        if !text::findable(tenant) {
            return Ok(Vec::new());
        }
        Ok(sqlx::query_as(LIST_ENDPOINTS)
            .bind(tenant)
            .fetch_all(&self.pool)
            .await?)
    }

    /// One endpoint of `tenant`; `NotFound` when it has none of that id.
    pub async fn get_webhook_endpoint(
        &self,
        tenant: &str,
        id: i64,
    ) -> Result<EndpointInfo, StoreError> {
        if !text::findable(tenant) {
            return Err(not_found(id));
        }
        let row: Option<EndpointInfo> = sqlx::query_as(GET_ENDPOINT)
            .bind(tenant)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.ok_or_else(|| not_found(id))
    }

    /// Changes the fields `update` sets; disabling by hand records who did it.
    pub async fn update_webhook_endpoint(
        &self,
        tenant: &str,
        id: i64,
        update: &EndpointUpdate,
    ) -> Result<EndpointInfo, StoreError> {
        if let Some(url) = &update.url {
            validate_url(url)?;
        }
        if let Some(events) = &update.events {
            validate_events(events)?;
        }
        if let Some(description) = &update.description {
            text::check("description", description)?;
        }
        let schedule = match &update.retry_schedule {
            Some(schedule) => (true, schedule_ms(schedule.as_deref())?),
            None => (false, None),
        };
        if !text::findable(tenant) {
            return Err(not_found(id));
        }
        let row: Option<EndpointInfo> = sqlx::query_as(UPDATE_ENDPOINT)
            .bind(tenant)
            .bind(id)
            .bind(&update.url)
            .bind(&update.events)
            .bind(&update.description)
            .bind(update.enabled)
            .bind("disabled by its owner")
            .bind(schedule.0)
            .bind(schedule.1)
            .bind(timeout_ms(update.timeout)?)
            .fetch_optional(&self.pool)
            .await
            .map_err(length_errors)?;
        row.ok_or_else(|| not_found(id))
    }

    /// Deletes an endpoint; its pending deliveries end `cancelled` when picked up.
    pub async fn delete_webhook_endpoint(&self, tenant: &str, id: i64) -> Result<(), StoreError> {
        if !text::findable(tenant) {
            return Err(not_found(id));
        }
        let row: Option<i64> = sqlx::query_scalar(DELETE_ENDPOINT)
            .bind(tenant)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|_| ()).ok_or_else(|| not_found(id))
    }

    /// Replaces the signing secret; the old one signs beside it for `grace`.
    pub async fn rotate_webhook_secret(
        &self,
        tenant: &str,
        id: i64,
        secret: &SealedValue,
        grace: Duration,
    ) -> Result<EndpointInfo, StoreError> {
        if !text::findable(tenant) {
            return Err(not_found(id));
        }
        let row: Option<EndpointInfo> = sqlx::query_as(ROTATE_SECRET)
            .bind(tenant)
            .bind(id)
            .bind(&secret.key_id)
            .bind(&secret.nonce)
            .bind(&secret.ciphertext)
            .bind(micros("grace", grace, false)?)
            .fetch_optional(&self.pool)
            .await?;
        row.ok_or_else(|| not_found(id))
    }

    /// Disables an endpoint with `reason` (after a 410 Gone); false if it already was.
    pub async fn disable_webhook_endpoint(
        &self,
        tenant: &str,
        id: i64,
        reason: &str,
    ) -> Result<bool, StoreError> {
        let row: Option<i64> = sqlx::query_scalar(DISABLE_ENDPOINT)
            .bind(tenant)
            .bind(id)
            .bind(text::lossy(reason).as_ref())
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.is_some())
    }
}

/// A CHECK violation on a length constraint as the field's input error.
fn length_errors(err: sqlx::Error) -> StoreError {
    if let sqlx::Error::Database(db) = &err
        && db.code().as_deref() == Some("23514")
    {
        let field = match db.constraint() {
            Some(c) if c.contains("description") => "description",
            Some(c) if c.contains("url") => "url",
            _ => "endpoint",
        };
        return StoreError::InvalidInput {
            field,
            message: db.message().to_owned(),
        };
    }
    StoreError::Database(err)
}
