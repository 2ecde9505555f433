//! The worker's view of job types and their compiled components.
//!
//! Owns two caches: job type records (tenant + name → component id, limits, backoff),
//! and tenants' records, refreshed within a short time-to-live so `sluice types set`
//! takes effect without a restart (re-read beside the attempts that use them, so those
//! rarely wait for the database: `record_cache`), and prepared components (component id → `TaskComponent`), fetched from the
//! store once and compiled by the sandbox at most once per host; and each type's secret
//! grant (its granted names opened with the host's keyring inside the job's own tenant),
//! trusted for the same TTL so `sluice secrets set` takes effect within seconds. It reads
//! through the store and the sandbox APIs; it writes nothing. Values are held in memory
//! only, never logged.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow};
use chrono::{DateTime, Utc};
use sluice_egress::Grant;
use sluice_sandbox::{
    CheckFuture, Contract, FollowUpGrant, FollowUpRefusal, Grants, HttpGrant, Limits,
    ReserveFuture, Sandbox, SecretGrant, TaskComponent,
};
use sluice_secrets::Keyring;
use sluice_store::{Backoff, JobTypeRecord, Store, TenantRecord};

use tracing::warn;

use super::follow_ups::{self, JobTypeLookup};
use super::journal_cap::JournalCap;
use super::record_cache::{Cached, RecordCache};
use super::type_limits::{capped, limits_for};
use sluice_shared::grants;
use sluice_shared::secrets::{self, GrantError};

/// How long a job type record is trusted before it is read again.
const JOB_TYPE_TTL: Duration = Duration::from_secs(5);

/// Everything needed to run one attempt of a job type.
#[derive(Clone)]
pub struct ResolvedType {
    pub component: TaskComponent,
    pub limits: Limits,
    pub backoff: Backoff,
    /// What the attempt may reach beyond its instance (outbound HTTP, ...).
    pub grants: Grants,
    /// The type is durable: its component's id and the cap on a job's journal
    /// (`durable.rs` turns them into the attempt's journal grant).
    pub durable: Option<(i64, JournalCap)>,
}

/// Why a job type could not be resolved; decides whether the attempt is retried.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The job type or its component is gone or invalid: retrying cannot help.
    #[error("{0}")]
    Permanent(String),
    /// The database could not be read: an infrastructure failure.
    #[error(transparent)]
    Infrastructure(#[from] anyhow::Error),
    /// The component targets a newer contract than this host runs (its type was pointed
    /// at it after the claim), or the type is granted secrets this host cannot open (no
    /// key, or a secret under a key it does not hold): give the attempt back for another
    /// host.
    #[error("{0}")]
    NotHere(String),
    /// A granted secret's stored value does not open under the key it names (altered or
    /// copied): the attempt fails, retryably, with this reason (setting it again fixes it).
    #[error("{0}")]
    Secret(String),
}

/// A type's secret grant as last resolved: when, for which names, what.
type CachedSecrets = (Instant, Vec<String>, Option<Arc<SecretGrant>>);

/// A tenant's record, and the follow-up grant built from it.
type TenantEntry = (TenantRecord, Arc<FollowUpGrant>);

pub struct Registry {
    store: Store,
    sandbox: Sandbox,
    defaults: Limits,
    types: RecordCache<(String, String), JobTypeRecord>,
    /// Each tenant's record (caps, egress bound) and the follow-up grant its 0.2
    /// attempts get, built once per record rather than once per attempt.
    tenants: RecordCache<String, TenantEntry>,
    /// Each type's outbound HTTP grant, built from its record and its tenant's (so at most
    /// a TTL behind either) once, not parsed again for every attempt.
    #[allow(clippy::type_complexity)]
    grants: Mutex<HashMap<(String, String), (Instant, DateTime<Utc>, Option<Arc<HttpGrant>>)>>,
    components: tokio::sync::Mutex<HashMap<i64, TaskComponent>>,
    /// The worker's runtime, where cached records are refreshed.
    runtime: tokio::runtime::Handle,
    /// The host's secrets keys (`None`: it has none and runs no type granted secrets).
    keyring: Option<Keyring>,
    secrets: Mutex<HashMap<(String, String), CachedSecrets>>,
}

impl Registry {
    pub fn new(
        store: Store,
        sandbox: Sandbox,
        defaults: Limits,
        keyring: Option<Keyring>,
    ) -> Arc<Self> {
        Arc::new(Self {
            store,
            sandbox,
            defaults,
            types: RecordCache::new(JOB_TYPE_TTL),
            tenants: RecordCache::new(JOB_TYPE_TTL),
            grants: Mutex::default(),
            components: tokio::sync::Mutex::default(),
            runtime: tokio::runtime::Handle::current(),
            keyring,
            secrets: Mutex::default(),
        })
    }

    /// The key ids this host can open, as the claim takes them (empty: no key).
    pub fn secret_key_ids(&self) -> Vec<String> {
        self.keyring.as_ref().map(Keyring::ids).unwrap_or_default()
    }

    /// The sandbox jobs of these types run in.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// The store records are read from (webhook deliveries read their target through it).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The host's secrets keys (`None`: it has none).
    pub fn keyring(&self) -> Option<&Keyring> {
        self.keyring.as_ref()
    }

    /// What a webhook delivery of `tenant` may reach: any http(s) destination the deny
    /// list leaves, inside the tenant's egress bound when the operator set one (read
    /// through the tenant cache).
    pub async fn webhook_grant(self: &Arc<Self>, tenant: &str) -> Result<Grant, ResolveError> {
        let (record, _) = self.tenant(tenant).await?;
        Ok(grants::webhook_grant(
            &record,
            &self.sandbox.config().egress.networks,
        ))
    }

    /// The newest contract this host runs, as the claim takes it.
    pub fn max_contract(&self) -> u8 {
        self.sandbox.config().max_contract.minor()
    }

    /// Resolve a job type to a ready-to-instantiate component and its limits.
    pub async fn resolve(
        self: &Arc<Self>,
        tenant: &str,
        job_type: &str,
    ) -> Result<ResolvedType, ResolveError> {
        // Both usually come from memory; when either must be read, both are read at once.
        let (record, (tenant, follow_ups)) =
            tokio::try_join!(self.job_type(tenant, job_type), self.tenant(tenant))?;
        let component = self.component(record.component_id).await?;
        let http = self.grant(&record, &tenant);
        // Only 0.2 components can import `sluice:task/jobs`.
        let follow_ups = (component.contract() >= Contract::V0_2).then_some(follow_ups);
        let secrets = self.secrets(&record).await?;
        Ok(ResolvedType {
            component,
            limits: capped(limits_for(&self.defaults, &record), &tenant.limits),
            backoff: record.backoff(Backoff::default()),
            grants: Grants {
                http,
                follow_ups,
                secrets,
                // Set by `durable::prepare` for a durable type's job, with its journal.
                durable: None,
            },
            durable: record.durable.then(|| {
                (
                    record.component_id,
                    JournalCap::of(record.journal_bytes, &tenant.limits),
                )
            }),
        })
    }

    /// The type's secret grant (`None`: it is granted none), opened inside its tenant.
    async fn secrets(
        &self,
        record: &JobTypeRecord,
    ) -> Result<Option<Arc<SecretGrant>>, ResolveError> {
        if record.secrets.is_empty() {
            return Ok(None);
        }
        let Some(keyring) = &self.keyring else {
            return Err(ResolveError::NotHere(format!(
                "job type `{}` of tenant `{}` is granted secrets ({}) and this host has no secrets key ({} or --secrets-key-file)",
                record.name,
                record.tenant,
                record.secrets.join(", "),
                secrets::KEY_ENV
            )));
        };
        let key = (record.tenant.clone(), record.name.clone());
        if let Some((at, names, grant)) = self.secrets.lock().expect("registry lock").get(&key)
            && at.elapsed() < JOB_TYPE_TTL
            && *names == record.secrets
        {
            return Ok(grant.clone());
        }
        let grant = secrets::secret_grant(&self.store, keyring, &record.tenant, &record.secrets)
            .await
            .map_err(|e| match e {
                GrantError::UnknownKey { .. } => ResolveError::NotHere(e.to_string()),
                GrantError::Unreadable { .. } => ResolveError::Secret(e.to_string()),
                GrantError::Store(e) => {
                    ResolveError::Infrastructure(anyhow::Error::new(e).context("load secrets"))
                }
            })?;
        let grant = Some(Arc::new(grant));
        self.secrets
            .lock()
            .expect("registry lock")
            .insert(key, (Instant::now(), record.secrets.clone(), grant.clone()));
        Ok(grant)
    }

    /// The tenant's job type (cached for a few seconds, like every record here; see
    /// `record_cache`).
    pub(super) async fn job_type(
        self: &Arc<Self>,
        tenant: &str,
        job_type: &str,
    ) -> Result<JobTypeRecord, ResolveError> {
        let key = (tenant.to_owned(), job_type.to_owned());
        self.cached(
            |r| &r.types,
            key,
            |this, (tenant, name)| async move { this.read_job_type(&tenant, &name).await },
        )
        .await
    }

    /// A record through `cache`: from memory while fresh, re-read beside the caller once
    /// past half its TTL, read with `read` (once for every caller missing it) otherwise.
    async fn cached<K, V, Fut>(
        self: &Arc<Self>,
        cache: fn(&Registry) -> &RecordCache<K, V>,
        key: K,
        read: impl Fn(Arc<Self>, K) -> Fut,
    ) -> Result<V, ResolveError>
    where
        K: std::hash::Hash + Eq + Clone + std::fmt::Debug + Send + 'static,
        V: Clone + Send + 'static,
        Fut: Future<Output = Result<V, ResolveError>> + Send + 'static,
    {
        match cache(self).get(&key, Instant::now()) {
            Cached::Fresh(record) => Ok(record),
            Cached::Refresh(record) => {
                self.refresh(cache, key, read);
                Ok(record)
            }
            Cached::Missing => {
                let load = || read(self.clone(), key.clone());
                cache(self).load(&key, load).await
            }
        }
    }

    /// Reads the job type on the worker's runtime: a follow-up check asks from a guest
    /// thread, and a pooled connection opened there would die with the guest runtime.
    async fn read_job_type(
        self: &Arc<Self>,
        tenant: &str,
        job_type: &str,
    ) -> Result<JobTypeRecord, ResolveError> {
        let (store, tenant, job_type) =
            (self.store.clone(), tenant.to_owned(), job_type.to_owned());
        let read = self.runtime.spawn(async move {
            store
                .get_job_type(&tenant, &job_type)
                .await
                .context("load job type")?
                .ok_or_else(|| {
                    ResolveError::Permanent(format!(
                        "job type `{job_type}` of tenant `{tenant}` no longer exists"
                    ))
                })
        });
        read.await.context("load job type")?
    }

    /// Re-reads a record that an attempt found past half its TTL, beside that attempt and
    /// on the worker's runtime (never a guest thread's: the pool's connections would die
    /// with it). A record gone from the database is forgotten, so that the next attempt
    /// learns it is gone; on an error, the cached one serves until its TTL.
    fn refresh<K, V, Fut>(
        self: &Arc<Self>,
        cache: fn(&Registry) -> &RecordCache<K, V>,
        key: K,
        read: impl FnOnce(Arc<Self>, K) -> Fut,
    ) where
        K: std::hash::Hash + Eq + Clone + std::fmt::Debug + Send + 'static,
        V: Clone + Send + 'static,
        Fut: Future<Output = Result<V, ResolveError>> + Send + 'static,
    {
        let this = self.clone();
        let reading = read(self.clone(), key.clone());
        self.runtime.spawn(async move {
            let cache = cache(&this);
            match reading.await {
                Ok(record) => cache.refreshed(&key, record),
                Err(ResolveError::Permanent(_)) => cache.forget(&key),
                Err(error) => {
                    warn!(%error, ?key, "could not re-read a cached record; it serves until its TTL");
                    cache.refresh_failed(&key);
                }
            }
        });
    }

    fn grant(&self, record: &JobTypeRecord, tenant: &TenantRecord) -> Option<Arc<HttpGrant>> {
        let key = (record.tenant.clone(), record.name.clone());
        let mut cached = self.grants.lock().expect("registry lock");
        if let Some((at, updated_at, grant)) = cached.get(&key)
            && at.elapsed() < JOB_TYPE_TTL
            && *updated_at == record.updated_at
        {
            return grant.clone();
        }
        let grant = grants::http_grant(record, tenant, &self.sandbox.config().egress.networks);
        cached.insert(key, (Instant::now(), record.updated_at, grant.clone()));
        grant
    }

    /// The tenant's caps and egress bound, and the follow-up grant they give, cached like
    /// job types (`sluice tenants limits|egress` take effect within the TTL).
    async fn tenant(self: &Arc<Self>, tenant: &str) -> Result<TenantEntry, ResolveError> {
        self.cached(
            |r| &r.tenants,
            tenant.to_owned(),
            |this, tenant| async move { this.read_tenant(&tenant).await },
        )
        .await
    }

    async fn read_tenant(self: &Arc<Self>, tenant: &str) -> Result<TenantEntry, ResolveError> {
        let caps = self
            .store
            .get_tenant(tenant)
            .await
            .context("load tenant")?
            .ok_or_else(|| {
                ResolveError::Permanent(format!("tenant `{tenant}` no longer exists"))
            })?;
        // Weak: this cache holds the grant, which looks job types up here.
        let registry: Weak<Registry> = Arc::downgrade(self);
        let follow_ups = follow_ups::grant(registry, &caps, self.store.default_max_payload_bytes());
        Ok((caps, follow_ups))
    }

    /// A component by id (a durable job's pinned one, or a type's), compiled once.
    pub(super) async fn component(&self, component_id: i64) -> Result<TaskComponent, ResolveError> {
        // One lock over fetch + compile: a burst of jobs for a new component compiles it once.
        let mut components = self.components.lock().await;
        if let Some(component) = components.get(&component_id) {
            return Ok(component.clone());
        }
        let gone = || ResolveError::Permanent(format!("component {component_id} no longer exists"));
        let record = self
            .store
            .get_component(component_id)
            .await
            .context("load component")?
            .ok_or_else(gone)?;
        let max = self.sandbox.config().max_contract;
        if i16::from(max.minor()) < record.contract {
            return Err(ResolveError::NotHere(format!(
                "component {component_id} targets sluice:task@0.{}.0; this host runs up to {max}",
                record.contract
            )));
        }
        let bytes = self
            .store
            .component_bytes(component_id)
            .await
            .context("load component bytes")?
            .ok_or_else(gone)?;
        let sandbox = self.sandbox.clone();
        let prepared = tokio::task::spawn_blocking(move || sandbox.prepare(&record.sha256, &bytes))
            .await
            .map_err(|e| anyhow!("compile task panicked: {e}"))?
            .map_err(|e| {
                ResolveError::Permanent(format!("component {component_id} cannot run: {e}"))
            })?;
        components.insert(component_id, prepared.clone());
        Ok(prepared)
    }
}

/// The tenant's caps over whatever the type and host defaults gave: a type that leaves a
/// limit unset runs under the host default, but never above its tenant's cap.
impl JobTypeLookup for Registry {
    fn has_job_type<'a>(self: Arc<Self>, tenant: &'a str, job_type: &'a str) -> CheckFuture<'a> {
        Box::pin(async move {
            match self.job_type(tenant, job_type).await {
                Ok(_) => Ok(()),
                Err(ResolveError::Permanent(_) | ResolveError::NotHere(_)) => {
                    Err(FollowUpRefusal::UnknownJobType(job_type.to_owned()))
                }
                Err(ResolveError::Infrastructure(error)) => {
                    Err(FollowUpRefusal::Unavailable(format!("{error:#}")))
                }
                Err(other) => Err(FollowUpRefusal::Unavailable(other.to_string())),
            }
        })
    }

    fn reserve_id(self: Arc<Self>) -> ReserveFuture<'static> {
        Box::pin(async move {
            match self.store().reserve_job_ids(1).await {
                Ok(ids) => ids
                    .first()
                    .map(|&id| id as u64)
                    .ok_or_else(|| FollowUpRefusal::Unavailable("no id reserved".to_owned())),
                Err(error) => Err(FollowUpRefusal::Unavailable(error.to_string())),
            }
        })
    }
}
