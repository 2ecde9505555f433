//! Each hostile sample ends its attempt with its named reason, and the same sandbox keeps
//! working: a normal `echo` run completes right after.

use std::time::Duration;

use crate::common::*;
use sluice_sandbox::{Failure, Limits, Outcome};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spin_forever_times_out() {
    let sb = sandbox();
    let limits = Limits {
        timeout: Some(Duration::from_millis(500)),
        // No fuel limit: a fast CPU burns the default 5·10⁹ units in under 500 ms.
        fuel: 0,
        ..limits()
    };
    let report = run(&sb, "spin-forever", "", &limits).await;
    assert_eq!(reason(&report), "timeout (500ms)");
    assert!(report.fuel_used > 0);
    assert_still_works(&sb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alloc_bomb_hits_the_memory_limit() {
    let sb = sandbox();
    let limits = Limits {
        memory_bytes: 32 << 20,
        ..limits()
    };
    let report = run(&sb, "alloc-bomb", "", &limits).await;
    assert_eq!(reason(&report), "memory limit (32 MiB)");
    assert!(
        report.peak_memory_bytes <= 32 << 20,
        "{}",
        report.peak_memory_bytes
    );
    assert_still_works(&sb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stack_overflow_traps() {
    let sb = sandbox();
    // Recursion that exhausts the engine's wasm stack.
    let report = run(&sb, "stack-overflow", r#"{"stack":"native"}"#, &limits()).await;
    assert_eq!(reason(&report), "trap: stack overflow");
    // Recursion that exhausts Rust's shadow stack in linear memory: the stack pointer
    // goes below zero and the next store lands outside memory.
    let report = run(&sb, "stack-overflow", r#"{"stack":"shadow"}"#, &limits()).await;
    assert_eq!(reason(&report), "trap: out of bounds memory access");
    assert_still_works(&sb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panic_traps_and_logs_the_message() {
    let sb = sandbox();
    let report = run(&sb, "panic", "", &limits()).await;
    assert_eq!(reason(&report), "trap: unreachable (panic)");
    let logs = String::from_utf8_lossy(&report.logs);
    assert!(logs.contains("panicked on purpose"), "logs: {logs}");
    assert_still_works(&sb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_output_is_refused() {
    let sb = sandbox();
    // 4 MiB: above the 1 MiB limit.
    let report = run(&sb, "huge-output", "", &limits()).await;
    assert_eq!(reason(&report), "output too large (1 MiB)");
    // Just above the limit, and far above it.
    let report = run(&sb, "huge-output", r#"{"bytes":1048577}"#, &limits()).await;
    assert_eq!(reason(&report), "output too large (1 MiB)");
    let report = run(&sb, "huge-output", r#"{"bytes":50000000}"#, &limits()).await;
    assert_eq!(reason(&report), "output too large (1 MiB)");
    // Exactly at the limit is fine.
    let report = run(&sb, "huge-output", r#"{"bytes":1048576}"#, &limits()).await;
    assert_eq!(output(&report).len(), 1 << 20);
    assert_still_works(&sb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_flood_completes_with_truncated_logs() {
    let sb = sandbox();
    let report = run(&sb, "log-flood", "", &limits()).await;
    assert_eq!(output(&report), b"done");
    assert!(report.logs_truncated);
    assert_eq!(report.logs.len() as u64, limits().log_bytes);
    // 10 MiB of lines plus prefixes were written; everything past the cap was counted.
    assert!(report.logs_dropped_bytes >= (10 << 20) - limits().log_bytes);
    let logs = String::from_utf8_lossy(&report.logs);
    assert!(logs.starts_with("[stdout] yyy"), "{}", &logs[..40]);
    assert!(logs.contains("\n[stderr] yyy"));
    assert!(logs.contains("\n[INFO] yyy"));
    assert_still_works(&sb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fs_escape_finds_no_filesystem() {
    let sb = sandbox();
    let report = run(&sb, "fs-escape", "", &limits()).await;
    let out = String::from_utf8_lossy(output(&report)).into_owned();
    let json: serde_json::Value = serde_json::from_str(&out).expect("JSON report");
    assert!(!out.contains("root:"), "leaked /etc/passwd: {out}");
    for key in ["read", "list", "list_cwd", "write"] {
        let v = json[key].as_str().unwrap_or_default();
        assert!(v.starts_with("error: "), "{key} was not refused: {out}");
    }
    assert_still_works(&sb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn env_snoop_sees_no_environment() {
    // The host process has an environment; none of it may reach the guest.
    assert!(std::env::var_os("PATH").is_some());
    let sb = sandbox();
    let report = run(&sb, "env-snoop", "", &limits()).await;
    let out = String::from_utf8_lossy(output(&report)).into_owned();
    let json: serde_json::Value = serde_json::from_str(&out).expect("JSON report");
    assert_eq!(json["vars"], serde_json::json!({}), "{out}");
    assert_eq!(json["args"], serde_json::json!([]), "{out}");
    assert!(!out.contains("PATH"), "{out}");
    assert_still_works(&sb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn net_escape_gets_no_network() {
    let sb = sandbox();
    let report = run(&sb, "net-escape", "", &limits()).await;
    let out = String::from_utf8_lossy(output(&report)).into_owned();
    let json: serde_json::Value = serde_json::from_str(&out).expect("JSON report");
    let attempts = json.as_object().expect("object");
    assert!(!attempts.is_empty());
    for (key, v) in attempts {
        let v = v.as_str().unwrap_or_default();
        assert!(v.starts_with("error: "), "{key} was not refused: {out}");
    }
    assert_still_works(&sb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_hostile_sample_in_one_sandbox() {
    // The same sandbox survives all of them in a row, and still runs `echo`.
    let sb = sandbox();
    let quick = Limits {
        timeout: Some(Duration::from_millis(300)),
        memory_bytes: 32 << 20,
        ..limits()
    };
    for name in [
        "spin-forever",
        "alloc-bomb",
        "stack-overflow",
        "panic",
        "huge-output",
        "log-flood",
        "fs-escape",
        "env-snoop",
        "net-escape",
    ] {
        let report = run(&sb, name, "", &quick).await;
        if let Outcome::Failed(Failure::Internal(msg)) = &report.outcome {
            panic!("{name}: host error {msg}");
        }
        assert_still_works(&sb).await;
    }
}
