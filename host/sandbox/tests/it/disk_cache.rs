//! The on-disk cache of precompiled components: a second host process (here, a second
//! Sandbox) loads instead of compiling; a corrupted or foreign file is recompiled, never
//! trusted.

use std::path::{Path, PathBuf};

use crate::common::*;
use sluice_sandbox::{CacheStats, Origin, Sandbox, SandboxConfig};

fn fresh_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("sluice-cache-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn sandbox_with_cache(dir: &Path) -> Sandbox {
    Sandbox::new(SandboxConfig {
        cache_dir: Some(dir.to_path_buf()),
        ..config()
    })
    .unwrap()
}

fn cache_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_sandbox_loads_from_disk() {
    let dir = fresh_dir("reuse");
    let bytes = sample("echo");
    let sha = sha256_hex(&bytes);

    let first = sandbox_with_cache(&dir);
    let c = first.prepare(&sha, &bytes).unwrap();
    assert_eq!(c.origin(), Origin::Compiled);
    // The same sandbox answers from memory the second time.
    let again = first.prepare(&sha, &bytes).unwrap();
    assert_eq!(again.origin(), Origin::Compiled);
    assert_eq!(
        first.cache_stats(),
        CacheStats {
            compiled: 1,
            memory_hits: 1,
            ..CacheStats::default()
        }
    );
    assert_eq!(cache_files(&dir).len(), 1);
    drop(first);

    let second = sandbox_with_cache(&dir);
    let c = second.prepare(&sha, &bytes).unwrap();
    assert_eq!(c.origin(), Origin::DiskCache);
    assert_eq!(second.cache_stats().compiled, 0);
    assert_eq!(second.cache_stats().loaded_from_disk, 1);
    eprintln!(
        "compile+check {:?}, load-from-disk+check {:?}",
        again.prepare_time(),
        c.prepare_time()
    );
    // And it runs.
    let report = second
        .run(&c, job("hi"), &limits(), Default::default())
        .await;
    assert_eq!(output(&report), b"hi");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupted_cache_file_is_recompiled() {
    let dir = fresh_dir("corrupt");
    let bytes = sample("echo");
    let sha = sha256_hex(&bytes);
    sandbox_with_cache(&dir).prepare(&sha, &bytes).unwrap();
    let [file] = cache_files(&dir).try_into().expect("one cache file");
    let good = std::fs::read(&file).unwrap();

    // Flip one byte in the machine code.
    let mut bad = good.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0xff;
    std::fs::write(&file, &bad).unwrap();
    let sb = sandbox_with_cache(&dir);
    let c = sb.prepare(&sha, &bytes).unwrap();
    assert_eq!(c.origin(), Origin::Compiled);
    assert_eq!(sb.cache_stats().disk_rejected, 1);
    let report = sb.run(&c, job("ok"), &limits(), Default::default()).await;
    assert_eq!(output(&report), b"ok");
    // The file was rewritten and is trusted again.
    assert_eq!(std::fs::read(&file).unwrap(), good);
    let c = sandbox_with_cache(&dir).prepare(&sha, &bytes).unwrap();
    assert_eq!(c.origin(), Origin::DiskCache);

    // Truncated, and garbage: both refused.
    for damaged in [
        good[..good.len() - 100].to_vec(),
        b"not a cache file".to_vec(),
    ] {
        std::fs::write(&file, &damaged).unwrap();
        let sb = sandbox_with_cache(&dir);
        assert_eq!(sb.prepare(&sha, &bytes).unwrap().origin(), Origin::Compiled);
        assert_eq!(sb.cache_stats().disk_rejected, 1);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_for_another_component_is_not_trusted() {
    // A valid artifact of `counter` placed under `echo`'s name (sha mismatch in the header)
    // must not be loaded as echo.
    let dir = fresh_dir("swap");
    let echo = sample("echo");
    let counter = sample("counter");
    let sb = sandbox_with_cache(&dir);
    sb.prepare(&sha256_hex(&echo), &echo).unwrap();
    sb.prepare(&sha256_hex(&counter), &counter).unwrap();
    drop(sb);
    let files = cache_files(&dir);
    let name = |sha: &str| {
        files
            .iter()
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(sha))
            .unwrap()
            .clone()
    };
    let echo_file = name(&sha256_hex(&echo));
    std::fs::copy(name(&sha256_hex(&counter)), &echo_file).unwrap();

    let sb = sandbox_with_cache(&dir);
    let c = sb.prepare(&sha256_hex(&echo), &echo).unwrap();
    assert_eq!(c.origin(), Origin::Compiled);
    assert_eq!(sb.cache_stats().disk_rejected, 1);
    let report = sb
        .run(&c, job("echo me"), &limits(), Default::default())
        .await;
    assert_eq!(output(&report), b"echo me");
    let _ = std::fs::remove_dir_all(&dir);
}
