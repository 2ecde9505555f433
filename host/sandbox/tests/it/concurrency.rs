//! Fresh instance per attempt, at concurrency: no state leaks between jobs.

use crate::common::*;
use futures::future::join_all;
use sluice_sandbox::{CancellationToken, Sandbox, SandboxConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counter_is_always_one() {
    let sb = sandbox(); // max_concurrency 4
    let counter = prepare(&sb, "counter");
    let runs = (0..20).map(|i| {
        let (sb, counter) = (sb.clone(), counter.clone());
        async move {
            let mut j = job("");
            j.id = i;
            sb.run(&counter, j, &limits(), CancellationToken::new())
                .await
        }
    });
    let reports = join_all(runs).await;
    assert_eq!(reports.len(), 20);
    for report in &reports {
        assert_eq!(output(report), b"1");
        assert!(report.instantiate_time <= report.elapsed);
    }
}

/// Pool slots are reused between attempts (and the host restores their memory in place
/// where it can): every attempt of `dirty-memory` must still find its image untouched by
/// the attempt before, with `echo` runs interleaved in the same few slots.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_is_restored_between_attempts_in_reused_slots() {
    let sb = Sandbox::new(SandboxConfig {
        max_concurrency: 1,
        ..config()
    })
    .expect("build the sandbox");
    let dirty = prepare(&sb, "dirty-memory");
    let echo = prepare(&sb, "echo");
    for i in 0..12 {
        let report = sb
            .run(&dirty, job(""), &limits(), CancellationToken::new())
            .await;
        assert_eq!(
            String::from_utf8_lossy(output(&report)),
            "clean",
            "attempt {i}"
        );
        // The guest really read and wrote its 2 MiB (about one fuel unit per byte or two).
        assert!(report.fuel_used > 1_000_000, "fuel {}", report.fuel_used);
        let report = sb
            .run(&echo, job("{}"), &limits(), CancellationToken::new())
            .await;
        assert_eq!(output(&report), b"{}");
    }
}
