//! Sandbox benchmarks: instantiate + call of `echo`, and host start-up with many
//! precompiled components on disk.

use std::time::Instant;

use serde_json::json;
use sluice_sandbox::{JobInput, Limits, Outcome, Sandbox, SandboxConfig};
use tokio_util::sync::CancellationToken;

use super::percentile;

pub async fn instantiate_and_call(
    echo: &[u8],
    iterations: usize,
) -> anyhow::Result<serde_json::Value> {
    // A disk cache outside the run: a big interpreter component (Python: 19 MB) compiles
    // once per machine, not once per run. `prepare` checks the bytes against the hash.
    let sandbox = Sandbox::new(SandboxConfig {
        cache_dir: Some(std::env::temp_dir().join("sluice-bench-cache")),
        ..SandboxConfig::default()
    })?;
    let sha = sluice_sandbox::sha256_hex(echo);
    let compiled = Instant::now();
    let component = sandbox.prepare(&sha, echo)?;
    eprintln!(
        "component ready in {:?} (compiled or loaded from the cache)",
        compiled.elapsed()
    );
    let limits = Limits::default();
    let mut micros = Vec::with_capacity(iterations);
    let mut instantiate = Vec::with_capacity(iterations);
    let mut inside = Vec::with_capacity(iterations);
    let mut guest = Vec::with_capacity(iterations);
    let mut fuel = 0;
    eprintln!("{iterations} sequential instantiate + call of echo");
    for i in 0..iterations {
        let job = JobInput {
            id: i as u64,
            job_type: "echo".into(),
            tenant: "bench".into(),
            attempt: 1,
            max_attempts: 1,
            payload: br#"{"hello":"world"}"#.to_vec(),
            trace: None,
        };
        let started = Instant::now();
        let report = sandbox
            .run(&component, job, &limits, CancellationToken::new())
            .await;
        micros.push(started.elapsed().as_secs_f64() * 1e6);
        instantiate.push(report.instantiate_time.as_secs_f64() * 1e6);
        inside.push(report.elapsed.as_secs_f64() * 1e6);
        guest.push(report.guest_time.as_secs_f64() * 1e6);
        fuel = report.fuel_used;
        anyhow::ensure!(
            matches!(report.outcome, Outcome::Completed { .. }),
            "echo failed: {:?}",
            report.outcome
        );
    }
    micros.sort_by(f64::total_cmp);
    instantiate.sort_by(f64::total_cmp);
    inside.sort_by(f64::total_cmp);
    guest.sort_by(f64::total_cmp);
    Ok(json!({
        "cmd": "sandbox", "iterations": iterations,
        "p50_us": percentile(&micros, 50.0), "p99_us": percentile(&micros, 99.0),
        "instantiate_p50_us": percentile(&instantiate, 50.0),
        "instantiate_p99_us": percentile(&instantiate, 99.0),
        "fuel_per_call": fuel,
        "instantiate_call_p50_us": percentile(&guest, 50.0),
        "instantiate_call_p99_us": percentile(&guest, 99.0),
        "attempt_p50_us": percentile(&inside, 50.0),
        "attempt_p99_us": percentile(&inside, 99.0),
    }))
}

/// Write `count` distinct components' artifacts to a fresh cache, then time a new host
/// loading all of them from disk.
pub async fn startup(echo: &[u8], count: usize) -> anyhow::Result<serde_json::Value> {
    let cache = std::env::temp_dir().join(format!("sluice-bench-startup-{}", std::process::id()));
    let variants: Vec<Vec<u8>> = (0..count).map(|i| with_custom_section(echo, i)).collect();
    {
        let warm = Sandbox::new(SandboxConfig {
            cache_dir: Some(cache.clone()),
            ..SandboxConfig::default()
        })?;
        eprintln!("precompiling {count} components into {}", cache.display());
        for bytes in &variants {
            let sha = warm.validate(bytes, usize::MAX)?.sha256;
            warm.prepare(&sha, bytes)?;
        }
    }
    let started = Instant::now();
    let host = Sandbox::new(SandboxConfig {
        cache_dir: Some(cache.clone()),
        ..SandboxConfig::default()
    })?;
    for bytes in &variants {
        let sha = sluice_sandbox::sha256_hex(bytes);
        host.prepare(&sha, bytes)?;
    }
    let seconds = started.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(&cache);
    Ok(json!({ "cmd": "startup", "components": count, "seconds": seconds }))
}

/// A distinct but equivalent component: the original plus a custom section naming `i`.
pub(super) fn with_custom_section(component: &[u8], i: usize) -> Vec<u8> {
    let name = b"sluice-bench";
    let payload = i.to_le_bytes();
    let body_len = 1 + name.len() + payload.len();
    let mut out = component.to_vec();
    out.push(0); // custom section id
    out.push(body_len as u8); // LEB128 of a length < 128
    out.push(name.len() as u8);
    out.extend_from_slice(name);
    out.extend_from_slice(&payload);
    out
}
