//! The host's single `wasmtime::Engine` (its epoch is ticked by `epoch_ticker`).
//!
//! Owns every engine-wide choice: Cranelift, component model, pooling allocator sized to
//! the configured concurrency, copy-on-write memory images, fuel, epoch interruption,
//! stack zeroing, and the wasm features a task does not need turned off. Must not hold
//! per-attempt state (that is `store.rs`).

use std::num::NonZeroUsize;

use anyhow::Context as _;
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, OptLevel, PoolingAllocationConfig,
    Strategy, WasmFeatures,
};

use crate::config::SandboxConfig;
use crate::limiter::InstanceCaps;

/// Pool slots beyond `max_concurrency`, so an attempt's slot is free again by the time
/// the next attempt starts even if its store is still being torn down.
const POOL_SLACK: u32 = 2;
/// Per-component ceilings. A Rust `wasm32-wasip2` component has a handful of core
/// instances, two or three memories and a few tables.
pub(crate) const COMPONENT_CAPS: InstanceCaps = InstanceCaps {
    instances: 32,
    memories: 4,
    tables: 8,
};
const TABLES_PER_MODULE: u32 = 4;
/// Host stack left to host functions on top of the guest's wasm stack.
const HOST_STACK: usize = 1 << 20;
/// Bytes of each pooled table reset with memset rather than madvise.
const KEEP_RESIDENT: usize = 64 << 10;
/// Bytes at the top of each pooled fiber stack zeroed with memset (the rest is
/// decommitted, so it reads as zeroes too). A task's host-side stack stays well inside
/// 16 KiB; zeroing 64 KiB on every attempt was ≈ 7% of the worker's CPU in a drain
/// profile (`docs/benchmarks.md`).
const STACK_KEEP_RESIDENT: usize = 16 << 10;
/// Most dirtied bytes of a linear memory restored in place (found by PAGEMAP_SCAN).
const MEMORY_KEEP_RESIDENT: usize = 1 << 20;
/// Frames kept in a trap's wasm backtrace (wasmtime's default).
const BACKTRACE_FRAMES: usize = 20;

/// Builds the engine. Fails if the configuration is inconsistent.
pub(crate) fn build_engine(cfg: &SandboxConfig) -> anyhow::Result<Engine> {
    let mut c = Config::new();
    c.strategy(Strategy::Cranelift)
        .cranelift_opt_level(OptLevel::Speed)
        .parallel_compilation(true)
        .wasm_component_model(true)
        // Interruption and metering.
        .epoch_interruption(true)
        .consume_fuel(true)
        // Memory: pooled slots, copy-on-write initial images, zeroed fiber stacks.
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool_config(cfg)?))
        .memory_init_cow(true)
        .async_stack_zeroing(true)
        .max_wasm_stack(cfg.max_wasm_stack)
        .async_stack_size(cfg.max_wasm_stack + HOST_STACK)
        // Keep wasm backtraces on: besides helping debug traps, `run.rs` tells an error
        // raised inside the guest (it carries a `WasmBacktrace`) from one raised while
        // reading the guest's result after it returned (it does not).
        .wasm_backtrace_max_frames(NonZeroUsize::new(BACKTRACE_FRAMES))
        // Features a task does not need. What Rust's wasm32-wasip2 output uses stays on
        // (bulk memory, reference types, multi-value, SIMD, sign extension, ...), and so does
        // multi-memory: components that link several core modules with their own memories
        // (JavaScript built by componentize-qjs) need it for the fused adapters between them.
        .shared_memory(false)
        .concurrency_support(false);
    for feature in [
        WasmFeatures::THREADS,
        WasmFeatures::SHARED_EVERYTHING_THREADS,
        WasmFeatures::GC,
        WasmFeatures::GC_TYPES,
        WasmFeatures::FUNCTION_REFERENCES,
        WasmFeatures::EXCEPTIONS,
        WasmFeatures::LEGACY_EXCEPTIONS,
        WasmFeatures::STACK_SWITCHING,
        WasmFeatures::MEMORY64,
        WasmFeatures::TAIL_CALL,
        WasmFeatures::RELAXED_SIMD,
        WasmFeatures::WIDE_ARITHMETIC,
        WasmFeatures::CUSTOM_PAGE_SIZES,
        WasmFeatures::CM_ASYNC,
    ] {
        c.wasm_features(feature, false);
    }
    Engine::new(&c)
        .map_err(to_anyhow)
        .context("configure the wasmtime engine")
}

/// `wasmtime::Error` is its own type (wasmtime's `anyhow` feature is off).
pub(crate) fn to_anyhow(e: wasmtime::Error) -> anyhow::Error {
    anyhow::Error::from_boxed(e.into_boxed_dyn_error())
}

fn pool_config(cfg: &SandboxConfig) -> anyhow::Result<PoolingAllocationConfig> {
    anyhow::ensure!(
        cfg.max_concurrency > 0,
        "max_concurrency must be at least 1"
    );
    let slots = cfg.max_concurrency + POOL_SLACK;
    let caps = COMPONENT_CAPS;
    let per = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    let mut p = PoolingAllocationConfig::default();
    p.total_component_instances(slots)
        .total_stacks(slots)
        .max_core_instances_per_component(per(caps.instances))
        .max_memories_per_component(per(caps.memories))
        .max_tables_per_component(per(caps.tables))
        .total_core_instances(slots.saturating_mul(per(caps.instances)))
        .total_memories(slots.saturating_mul(per(caps.memories)))
        .total_tables(slots.saturating_mul(per(caps.tables)))
        .max_tables_per_module(TABLES_PER_MODULE)
        .max_memories_per_module(1)
        // Each memory's slot may grow to the host ceiling; the per-attempt limit (a total
        // over memories) is enforced below it by the store's limiter. The virtual
        // reservation per slot stays wasmtime's default (4 GiB + guard), which is larger,
        // so bounds checks are still elided.
        .max_memory_size(usize::try_from(cfg.max_memory_bytes).context("max_memory_bytes")?)
        .table_elements(usize::try_from(cfg.max_table_elements).context("max_table_elements")?);
    // Reset pooled slots without madvise where possible: on a multi-threaded host every
    // madvise is a TLB-shootdown IPI, and the pages it drops fault back in on the next
    // attempt. With PAGEMAP_SCAN (Linux 6.7+; `Auto` falls back to the old way where it
    // is missing) wasmtime finds the pages an attempt dirtied anywhere in a linear memory
    // and restores up to MEMORY_KEEP_RESIDENT bytes of them in place (zeroes, or the
    // component's initial image), decommitting only the rest. A Rust task touches its
    // stack just below 1 MiB and its data and heap above it, so a 64 KiB prefix reset
    // (what this did before) missed them all. Measured (`sluice bench sandbox`):
    // instantiate + call 15.6 → 5–7 µs; drain +25%. Tables keep a 64 KiB memset prefix,
    // fiber stacks a 16 KiB one. Isolation is unchanged: every page is restored either way.
    p.pagemap_scan(Enabled::Auto)
        .linear_memory_keep_resident(MEMORY_KEEP_RESIDENT)
        .table_keep_resident(KEEP_RESIDENT)
        .async_stack_keep_resident(STACK_KEEP_RESIDENT);
    Ok(p)
}
