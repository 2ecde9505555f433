//! Compiled components: [`TaskComponent`] (a checked, pre-instantiated task, cheap to
//! clone) and [`ComponentCache`], which makes sure each component is compiled at most once
//! per host — an in-memory map by sha256, then the on-disk cache, then Cranelift.
//!
//! Concurrent `prepare` calls for the same sha256 wait for one compilation rather than
//! racing. Must not run guests.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::{Component, Linker};

use crate::contract::Contract;
use crate::disk_cache::{DiskCache, Lookup};
use crate::error::SandboxError;
use crate::host_imports::TaskPre;
use crate::store::HostState;
use crate::validate;

/// sha256 of `bytes` as lowercase hex: the key components are stored and cached under.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// What [`Sandbox::validate`](crate::Sandbox::validate) learned about an accepted component.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComponentInfo {
    /// sha256 of the bytes, lowercase hex.
    pub sha256: String,
    /// Size of the bytes.
    pub size_bytes: u64,
    /// Names the component imports (all provided by the host).
    pub imports: Vec<String>,
    /// Names the component exports (`run` among them).
    pub exports: Vec<String>,
    /// The lowest task contract that provides every import (see `wit/README.md`).
    pub contract: Contract,
    /// Time Cranelift took to compile it.
    pub compile_time: Duration,
}

/// Where a [`TaskComponent`] came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Compiled by Cranelift in this process.
    Compiled,
    /// Loaded from this host's on-disk cache of precompiled artifacts.
    DiskCache,
}

/// A component checked against the task world and pre-instantiated against the host's
/// imports. Cloning is cheap; each attempt instantiates it into a fresh store.
#[derive(Clone)]
pub struct TaskComponent {
    inner: Arc<Prepared>,
}

struct Prepared {
    sha256: String,
    contract: Contract,
    pre: TaskPre<HostState>,
    origin: Origin,
    prepare_time: Duration,
}

impl TaskComponent {
    /// sha256 of the component's bytes (lowercase hex).
    pub fn sha256(&self) -> &str {
        &self.inner.sha256
    }

    /// The task contract its imports need.
    pub fn contract(&self) -> Contract {
        self.inner.contract
    }

    /// Whether this host compiled it or loaded it from its disk cache.
    pub fn origin(&self) -> Origin {
        self.inner.origin
    }

    /// Time to compile or load it, plus checking and pre-instantiating.
    pub fn prepare_time(&self) -> Duration {
        self.inner.prepare_time
    }

    pub(crate) fn pre(&self) -> &TaskPre<HostState> {
        &self.inner.pre
    }
}

impl fmt::Debug for TaskComponent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskComponent")
            .field("sha256", &self.inner.sha256)
            .field("origin", &self.inner.origin)
            .field("prepare_time", &self.inner.prepare_time)
            .finish_non_exhaustive()
    }
}

/// Counters of the component cache, for metrics and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Components compiled by Cranelift.
    pub compiled: u64,
    /// Components loaded from the disk cache.
    pub loaded_from_disk: u64,
    /// `prepare` calls answered from memory.
    pub memory_hits: u64,
    /// Disk cache files refused (corrupt, foreign, stale) and replaced.
    pub disk_rejected: u64,
}

/// One slot per sha256; its mutex serialises preparation of that component.
type Slot = Arc<Mutex<Option<TaskComponent>>>;

pub(crate) struct ComponentCache {
    slots: Mutex<HashMap<String, Slot>>,
    disk: Option<DiskCache>,
    compiled: AtomicU64,
    loaded_from_disk: AtomicU64,
    memory_hits: AtomicU64,
    disk_rejected: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl ComponentCache {
    pub(crate) fn new(disk: Option<DiskCache>) -> Self {
        ComponentCache {
            slots: Mutex::new(HashMap::new()),
            disk,
            compiled: AtomicU64::new(0),
            loaded_from_disk: AtomicU64::new(0),
            memory_hits: AtomicU64::new(0),
            disk_rejected: AtomicU64::new(0),
        }
    }

    pub(crate) fn stats(&self) -> CacheStats {
        CacheStats {
            compiled: self.compiled.load(Ordering::Relaxed),
            loaded_from_disk: self.loaded_from_disk.load(Ordering::Relaxed),
            memory_hits: self.memory_hits.load(Ordering::Relaxed),
            disk_rejected: self.disk_rejected.load(Ordering::Relaxed),
        }
    }

    /// Returns the prepared component for `sha256`, compiling or loading it if needed.
    pub(crate) fn prepare(
        &self,
        engine: &Engine,
        linker: &Linker<HostState>,
        max_memory_bytes: u64,
        max_contract: Contract,
        sha256: &str,
        bytes: &[u8],
    ) -> Result<TaskComponent, SandboxError> {
        let key = sha256.to_ascii_lowercase();
        let slot = lock(&self.slots).entry(key.clone()).or_default().clone();
        let mut slot = lock(&slot);
        if let Some(ready) = slot.as_ref() {
            self.memory_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(ready.clone());
        }

        let start = Instant::now();
        let digest: [u8; 32] = Sha256::digest(bytes).into();
        let actual = hex::encode(digest);
        if actual != key {
            return Err(SandboxError::HashMismatch {
                expected: sha256.to_owned(),
                actual,
            });
        }
        validate::check_header(bytes, usize::MAX)?;
        let (component, origin) = self.load_or_compile(engine, &digest, bytes)?;
        let (pre, surface) =
            validate::check_component(engine, linker, &component, max_memory_bytes, max_contract)?;
        let ready = TaskComponent {
            inner: Arc::new(Prepared {
                sha256: key,
                contract: surface.contract,
                pre,
                origin,
                prepare_time: start.elapsed(),
            }),
        };
        *slot = Some(ready.clone());
        Ok(ready)
    }

    fn load_or_compile(
        &self,
        engine: &Engine,
        digest: &[u8; 32],
        bytes: &[u8],
    ) -> Result<(Component, Origin), SandboxError> {
        if let Some(disk) = &self.disk {
            match disk.load(engine, digest) {
                Lookup::Hit(component) => {
                    self.loaded_from_disk.fetch_add(1, Ordering::Relaxed);
                    return Ok((component, Origin::DiskCache));
                }
                Lookup::Miss => {}
                Lookup::Rejected(why) => {
                    self.disk_rejected.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(reason = %why, "component cache file rejected; recompiling");
                }
            }
        }
        let started = Instant::now();
        let component = validate::compile(engine, bytes)?;
        self.compiled.fetch_add(1, Ordering::Relaxed);
        tracing::info!(
            sha256 = %hex::encode(digest),
            compile_ms = started.elapsed().as_millis() as u64,
            "component compiled"
        );
        if let Some(disk) = &self.disk {
            let written = component
                .serialize()
                .map_err(|e| std::io::Error::other(e.to_string()))
                .and_then(|artifact| disk.store(digest, &artifact));
            if let Err(e) = written {
                // The component still runs; only the next restart pays for compiling again.
                tracing::warn!(error = %e, "could not write the component cache file");
            }
        }
        Ok((component, Origin::Compiled))
    }
}
