//! [`Sandbox`]: the crate's front door. Holds the engine, the linker, the component cache,
//! the guest runtime and the epoch ticker, and wires `validate` / `prepare` / `run` to them.
//!
//! Thin on purpose: policy lives in the modules it calls. Must not know Postgres exists.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use tokio_util::sync::CancellationToken;
use wasmtime::Engine;
use wasmtime::component::Linker;

use sluice_egress::{Connector, ConnectorConfig};

use crate::capabilities::Grants;
use crate::component::{CacheStats, ComponentCache, ComponentInfo, TaskComponent, sha256_hex};
use crate::config::{Limits, SandboxConfig};
use crate::disk_cache::DiskCache;
use crate::engine::{build_engine, to_anyhow};
use crate::epoch_ticker::EpochTicker;
use crate::error::{SandboxError, ValidationError};
use crate::guest_runtime::GuestRuntime;
use crate::outcome::{Failure, RunReport};
use crate::run::{self, JobInput};
use crate::store::{self, HostState, Reach};
use crate::validate;

/// Runs task components. One per host; cheap to clone (all clones share one engine,
/// cache and guest runtime). Dropping the last clone stops the epoch ticker and aborts
/// attempts still running.
#[derive(Clone)]
pub struct Sandbox {
    inner: Arc<Inner>,
}

struct Inner {
    config: SandboxConfig,
    engine: Engine,
    linker: Linker<HostState>,
    connector: Connector,
    cache: ComponentCache,
    guests: GuestRuntime,
    ticker: EpochTicker,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("config", &self.inner.config)
            .field("cache", &self.inner.cache.stats())
            .finish_non_exhaustive()
    }
}

impl Sandbox {
    /// Builds the engine, linker, guest runtime and epoch ticker; opens the disk cache.
    pub fn new(config: SandboxConfig) -> anyhow::Result<Sandbox> {
        let engine = build_engine(&config)?;
        let mut linker = Linker::new(&engine);
        store::add_to_linker(&mut linker, config.max_contract)
            .map_err(to_anyhow)
            .context("add host imports to the linker")?;
        let disk = match &config.cache_dir {
            Some(dir) => Some(
                DiskCache::open(dir, &engine)
                    .with_context(|| format!("open the component cache {}", dir.display()))?,
            ),
            None => None,
        };
        let connector = Connector::new(ConnectorConfig {
            networks: config.egress.networks.clone(),
            extra_root_certs_pem: config.egress.extra_root_certs_pem.clone(),
            ..ConnectorConfig::default()
        })
        .context("set up the egress connector: the extra root CAs (EgressConfig::extra_root_certs_pem) are not usable PEM certificates")?;
        let guests = GuestRuntime::new(config.guest_threads, config.max_concurrency)?;
        let ticker = EpochTicker::start(&engine, config.epoch_tick)?;
        Ok(Sandbox {
            inner: Arc::new(Inner {
                cache: ComponentCache::new(disk),
                config,
                engine,
                linker,
                connector,
                guests,
                ticker,
            }),
        })
    }

    /// The configuration this sandbox was built with.
    pub fn config(&self) -> &SandboxConfig {
        &self.inner.config
    }

    /// The vetted outbound connector guests send through; the host's webhook deliveries
    /// use the same one (one SSRF implementation, the same opened networks and CAs).
    pub fn connector(&self) -> &Connector {
        &self.inner.connector
    }

    /// Checks that `bytes` is a component this host can run as a task: at most
    /// `max_bytes`, a component (not a core module), compiles, exports `run` with the task
    /// world's type, and imports only what the host provides. Compiles the component
    /// (slow: call from a blocking context); does not cache it.
    pub fn validate(
        &self,
        bytes: &[u8],
        max_bytes: usize,
    ) -> Result<ComponentInfo, ValidationError> {
        validate::check_header(bytes, max_bytes)?;
        let started = Instant::now();
        let component = validate::compile(&self.inner.engine, bytes)?;
        let compile_time = started.elapsed();
        let (_, surface) = validate::check_component(
            &self.inner.engine,
            &self.inner.linker,
            &component,
            self.inner.config.max_memory_bytes,
            self.inner.config.max_contract,
        )?;
        Ok(ComponentInfo {
            sha256: sha256_hex(bytes),
            size_bytes: bytes.len() as u64,
            imports: surface.imports,
            exports: surface.exports,
            contract: surface.contract,
            compile_time,
        })
    }

    /// Returns the runnable component stored under `sha256`, compiling it at most once per
    /// host: from memory if prepared before, else from the disk cache, else by compiling
    /// (and writing the disk cache). Checks that `bytes` hash to `sha256`. May take seconds
    /// on a miss: call from a blocking context (`spawn_blocking`).
    pub fn prepare(&self, sha256: &str, bytes: &[u8]) -> Result<TaskComponent, SandboxError> {
        self.inner.cache.prepare(
            &self.inner.engine,
            &self.inner.linker,
            self.inner.config.max_memory_bytes,
            self.inner.config.max_contract,
            sha256,
            bytes,
        )
    }

    /// Counters of the component cache.
    pub fn cache_stats(&self) -> CacheStats {
        self.inner.cache.stats()
    }

    /// Runs one attempt of `job` in a fresh instance under `limits` (capped by the host's
    /// ceilings), on the sandbox's own runtime. Waits for a free slot first if
    /// `max_concurrency` attempts are running. Never fails: every ending, including host
    /// trouble, is a [`RunReport`]. Cancelling `cancel` stops the guest within a tick or
    /// two; dropping the returned future stops it too.
    pub async fn run(
        &self,
        component: &TaskComponent,
        job: JobInput,
        limits: &Limits,
        cancel: CancellationToken,
    ) -> RunReport {
        self.run_with(component, job, limits, Grants::default(), cancel)
            .await
    }

    /// [`Sandbox::run`] with what the job type is granted beyond its own instance
    /// ([`Grants::default`]: nothing, as for `run`).
    pub async fn run_with(
        &self,
        component: &TaskComponent,
        job: JobInput,
        limits: &Limits,
        grants: Grants,
        cancel: CancellationToken,
    ) -> RunReport {
        let limits = limits.clamped_to(&self.inner.config);
        let waited = Instant::now();
        let slot = tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            slot = self.inner.guests.slot() => slot,
        };
        let Some(slot) = slot else {
            // Cancelled while waiting (the slots themselves are never closed).
            return run::failed_before_start(Failure::Cancelled, Duration::ZERO);
        };
        if waited.elapsed() > Duration::from_millis(100) {
            tracing::debug!(
                waited_ms = waited.elapsed().as_millis() as u64,
                "waited for a guest slot"
            );
        }
        let tick = self.inner.config.epoch_tick;
        // No grant, no connector: such an attempt's requests are all denied anyway; nor
        // under recorded HTTP, whose requests are all answered by the host.
        let reach = Reach {
            connector: grants
                .http
                .as_ref()
                .filter(|grant| grant.recorded.is_none())
                .map(|_| self.inner.connector.clone()),
            grants,
        };
        // The epoch ticks from before the store exists until after it is gone: the
        // guest's timeout and cancel checks, and its yields, ride on those ticks.
        let awake = self.inner.ticker.awake();
        // Boxed where it is made: the attempt's state machine is kilobytes, and a future
        // moved by value (into the task below, and by tokio when it stores the task's
        // output) is copied whole each time; boxed, each move copies a pointer.
        let attempt = Box::pin(run::run_attempt(
            component.clone(),
            job,
            limits,
            reach,
            cancel,
            tick,
        ));
        let handle = self.inner.guests.spawn(async move {
            let report = attempt.await;
            drop(slot); // after the store (inside `attempt`) is gone
            drop(awake);
            report
        });
        let Some(handle) = handle else {
            return run::failed_before_start(
                Failure::Internal("the guest runtime is shut down".into()),
                Duration::ZERO,
            );
        };
        match handle.join().await {
            Ok(report) => report,
            Err(e) if e.is_panic() => {
                tracing::error!(error = %e, "a guest attempt panicked in host code");
                run::failed_before_start(
                    Failure::Internal("the attempt panicked in host code".into()),
                    Duration::ZERO,
                )
            }
            Err(_) => run::failed_before_start(
                Failure::Internal("the attempt was aborted (sandbox shutting down)".into()),
                Duration::ZERO,
            ),
        }
    }
}
