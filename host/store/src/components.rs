//! Uploaded Wasm components: save, look up, list, fetch bytes.
//!
//! Owns: every statement on `sluice.components`. Must not: parse or validate Wasm (the
//! sandbox does that before calling [`Store::put_component`]); the store hashes and saves.

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use crate::validate::validate_tenant_id;
use crate::{Store, StoreError, text};

/// A component to upload.
#[derive(Clone, Debug)]
pub struct NewComponent {
    /// The tenant that will own it; must exist.
    pub tenant: String,
    /// 1 to 128 characters.
    pub name: String,
    /// `None` picks the next integer version ("1", "2", ...) unless identical bytes are
    /// already stored under this name, in which case that record is returned.
    /// `Some(v)`: an existing `v` with the same bytes is returned; with different bytes
    /// it is refused (versions are immutable).
    pub version: Option<String>,
    /// The component's Wasm bytes, already validated by the sandbox; stored as they are.
    pub bytes: Vec<u8>,
    /// The contract it targets, as N of `sluice:task@0.N.0` (the sandbox's validation
    /// finds it); 1..=99.
    pub contract: u8,
}

/// A stored component, without its bytes (see [`Store::component_bytes`]).
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct ComponentRecord {
    /// The component's id (`sluice.components.id`); job types point at it.
    pub id: i64,
    /// The tenant that owns it.
    pub tenant: String,
    /// Its name, shared by every version of it within the tenant.
    pub name: String,
    /// Its version, unique per name within the tenant and never reused for other bytes.
    pub version: String,
    /// Lowercase hex sha256 of the bytes.
    pub sha256: String,
    /// Length of the bytes.
    pub size: i64,
    /// N of `sluice:task@0.N.0`, the contract the component targets.
    pub contract: i16,
    /// When it was uploaded.
    pub created_at: DateTime<Utc>,
}

const LOCK_COMPONENT_NAME: &str = include_str!("../sql/components/lock_name.sql");
const TENANT_EXISTS: &str = include_str!("../sql/tenants/exists.sql");
const FIND_BY_SHA: &str = include_str!("../sql/components/find_by_sha.sql");
const FIND_VERSION: &str = include_str!("../sql/components/find_version.sql");
const FIND_LATEST: &str = include_str!("../sql/components/find_latest.sql");
const NEXT_VERSION: &str = include_str!("../sql/components/next_version.sql");
const INSERT_COMPONENT: &str = include_str!("../sql/components/insert.sql");
const GET_COMPONENT: &str = include_str!("../sql/components/get.sql");
const COMPONENT_BYTES: &str = include_str!("../sql/components/bytes.sql");
const LIST_COMPONENTS: &str = include_str!("../sql/components/list.sql");

fn check_len(field: &'static str, value: &str, max: usize) -> Result<(), StoreError> {
    let n = value.chars().count();
    if n == 0 || n > max {
        return Err(StoreError::InvalidInput {
            field,
            message: format!("must be 1 to {max} characters, got {n}"),
        });
    }
    text::check(field, value)
}

impl Store {
    /// Saves a component (see [`NewComponent`] for how versions are picked). Serialised
    /// per (tenant, name) with an advisory lock, so concurrent uploads get distinct
    /// versions.
    pub async fn put_component(&self, c: &NewComponent) -> Result<ComponentRecord, StoreError> {
        validate_tenant_id(&c.tenant).map_err(|_| StoreError::UnknownTenant(c.tenant.clone()))?;
        check_len("component name", &c.name, 128)?;
        if let Some(v) = &c.version {
            check_len("component version", v, 64)?;
        }
        if !(1..=99).contains(&c.contract) {
            return Err(StoreError::InvalidInput {
                field: "contract",
                message: format!(
                    "contract 0.{}.0 is out of range (0.1.0 to 0.99.0)",
                    c.contract
                ),
            });
        }
        if c.bytes.is_empty() {
            return Err(StoreError::InvalidInput {
                field: "component bytes",
                message: "the component is empty".into(),
            });
        }
        let sha256 = hex::encode(Sha256::digest(&c.bytes));

        let mut tx = self.pool.begin().await?;
        sqlx::query(LOCK_COMPONENT_NAME)
            .bind(&c.tenant)
            .bind(&c.name)
            .execute(&mut *tx)
            .await?;
        let tenant_exists: bool = sqlx::query_scalar(TENANT_EXISTS)
            .bind(&c.tenant)
            .fetch_one(&mut *tx)
            .await?;
        if !tenant_exists {
            return Err(StoreError::UnknownTenant(c.tenant.clone()));
        }

        let version = match &c.version {
            None => {
                let same: Option<ComponentRecord> = sqlx::query_as(FIND_BY_SHA)
                    .bind(&c.tenant)
                    .bind(&c.name)
                    .bind(&sha256)
                    .fetch_optional(&mut *tx)
                    .await?;
                if let Some(existing) = same {
                    return Ok(existing);
                }
                sqlx::query_scalar::<_, String>(NEXT_VERSION)
                    .bind(&c.tenant)
                    .bind(&c.name)
                    .fetch_one(&mut *tx)
                    .await?
            }
            Some(v) => {
                let existing: Option<ComponentRecord> = sqlx::query_as(FIND_VERSION)
                    .bind(&c.tenant)
                    .bind(&c.name)
                    .bind(v)
                    .fetch_optional(&mut *tx)
                    .await?;
                match existing {
                    Some(e) if e.sha256 == sha256 => return Ok(e),
                    Some(e) => {
                        return Err(StoreError::Conflict {
                            field: "component version",
                            message: format!(
                                "{}/{} version {v} already exists with different bytes (sha256 {}); \
                                 versions are immutable: upload under a new version or omit it",
                                c.tenant, c.name, e.sha256
                            ),
                        });
                    }
                    None => v.clone(),
                }
            }
        };

        let record: ComponentRecord = sqlx::query_as(INSERT_COMPONENT)
            .bind(&c.tenant)
            .bind(&c.name)
            .bind(&version)
            .bind(&sha256)
            .bind(&c.bytes)
            .bind(i16::from(c.contract))
            .fetch_one(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(record)
    }

    /// One component's metadata by id.
    pub async fn get_component(&self, id: i64) -> Result<Option<ComponentRecord>, StoreError> {
        Ok(sqlx::query_as(GET_COMPONENT)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// The bytes of a component (the worker fetches them only on a compile-cache miss).
    pub async fn component_bytes(&self, component_id: i64) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(sqlx::query_scalar(COMPONENT_BYTES)
            .bind(component_id)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// A component by name; `version: None` means the most recently uploaded one.
    pub async fn find_component(
        &self,
        tenant: &str,
        name: &str,
        version: Option<&str>,
    ) -> Result<Option<ComponentRecord>, StoreError> {
        if ![tenant, name, version.unwrap_or("")]
            .into_iter()
            .all(text::findable)
        {
            return Ok(None);
        }
        let query = match version {
            Some(v) => sqlx::query_as(FIND_VERSION).bind(tenant).bind(name).bind(v),
            None => sqlx::query_as(FIND_LATEST).bind(tenant).bind(name),
        };
        Ok(query.fetch_optional(&self.pool).await?)
    }

    /// Components of one tenant (or of all), by tenant, name and upload order.
    pub async fn list_components(
        &self,
        tenant: Option<&str>,
    ) -> Result<Vec<ComponentRecord>, StoreError> {
        if !tenant.is_none_or(text::findable) {
            return Ok(Vec::new());
        }
        Ok(sqlx::query_as(LIST_COMPONENTS)
            .bind(tenant)
            .fetch_all(&self.pool)
            .await?)
    }
}
