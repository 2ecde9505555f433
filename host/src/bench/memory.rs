//! Worker memory: peak resident set of a worker draining jobs of many job types (each
//! its own component, all compiled and cached first) at a high concurrency.
//!
//! Linux only (reads `/proc/self/status`). Owns the setup and the measurement; the drain
//! is the real worker.

use anyhow::Context;
use serde_json::json;
use sluice_sandbox::{Sandbox, SandboxConfig, sha256_hex};
use sluice_store::{JobTypeSpec, NewComponent, NewJob, Store};
use tokio_util::sync::CancellationToken;

use super::BENCH_TENANT;
use super::queue::drain_config;
use super::sandbox::with_custom_section;
use sluice_worker::{self as worker, Prefetch};

pub async fn memory(
    store: &Store,
    echo: &[u8],
    components: usize,
    jobs: usize,
    concurrency: usize,
    prefetch: Prefetch,
) -> anyhow::Result<serde_json::Value> {
    let sandbox = Sandbox::new(SandboxConfig {
        max_concurrency: u32::try_from(concurrency).context("concurrency")?,
        ..SandboxConfig::default()
    })?;
    eprintln!("registering and compiling {components} distinct echo components");
    let mut types = Vec::with_capacity(components);
    for i in 0..components {
        let bytes = with_custom_section(echo, i);
        // Compiled and kept in the sandbox's memory cache: the worker finds them there.
        sandbox.prepare(&sha256_hex(&bytes), &bytes)?;
        let name = format!("echo-{i}");
        let component = store
            .put_component(&NewComponent {
                tenant: BENCH_TENANT.into(),
                name: name.clone(),
                version: None,
                contract: sluice_sandbox::contract_of(&bytes)?.minor(),
                bytes,
            })
            .await?;
        store
            .set_job_type(&JobTypeSpec::new(BENCH_TENANT, &name, component.id))
            .await?;
        types.push(name);
    }
    let all: Vec<NewJob> = (0..jobs)
        .map(|i| {
            let job_type = &types[i % types.len()];
            NewJob::new(
                BENCH_TENANT,
                job_type,
                format!("{{\"n\":{i}}}").into_bytes(),
            )
        })
        .collect();
    for chunk in all.chunks(10_000) {
        store.enqueue_many(chunk).await?;
    }
    let before = status_kib("VmRSS")?;
    reset_peak();
    eprintln!("draining {jobs} jobs at concurrency {concurrency}, prefetch {prefetch}");
    let config = drain_config("bench-memory", concurrency, prefetch);
    let started = std::time::Instant::now();
    let summary = worker::run(store.clone(), sandbox, config, CancellationToken::new()).await?;
    let seconds = started.elapsed().as_secs_f64();
    Ok(json!({
        "cmd": "memory", "components": components, "n": jobs, "c": concurrency,
        "prefetch": prefetch, "completed": summary.completed,
        "jobs_per_s": summary.completed as f64 / seconds,
        "rss_before_mib": before as f64 / 1024.0,
        "peak_rss_mib": status_kib("VmHWM")? as f64 / 1024.0,
    }))
}

/// A `kB` field of `/proc/self/status`.
fn status_kib(field: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status").context("read /proc/self/status")?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .with_context(|| format!("no {field} in /proc/self/status"))
}

/// Resets the peak (`VmHWM`) to the current RSS, so the figure covers the drain only.
fn reset_peak() {
    if let Err(error) = std::fs::write("/proc/self/clear_refs", "5") {
        eprintln!("cannot reset the peak RSS ({error}); it includes the setup");
    }
}
