//! Time, cancellation and fuel: the behavioural bounds the worker relies on.

use std::time::{Duration, Instant};

use crate::common::*;
use sluice_sandbox::{CancellationToken, Failure, Limits, Outcome};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_is_enforced_within_bounds() {
    let sb = sandbox();
    let spin = prepare(&sb, "spin-forever");
    let limits = Limits {
        timeout: Some(Duration::from_millis(200)),
        fuel: 0, // no fuel limit: only the clock stops it
        ..limits()
    };
    for _ in 0..3 {
        let report = sb
            .run(&spin, job(""), &limits, CancellationToken::new())
            .await;
        eprintln!("timeout 200ms: elapsed {:?}", report.elapsed);
        assert_eq!(
            report.outcome,
            Outcome::Failed(Failure::Timeout(Duration::from_millis(200)))
        );
        assert!(
            report.elapsed >= Duration::from_millis(200)
                && report.elapsed < Duration::from_millis(400),
            "elapsed {:?}",
            report.elapsed
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_that_spins_after_an_idle_spell_is_still_timed_out() {
    // The epoch ticker sleeps while no attempt runs: the next attempt must wake it before
    // its guest spins, or nothing would ever interrupt the guest.
    let sb = sandbox();
    let spin = prepare(&sb, "spin-forever");
    let limits = Limits {
        timeout: Some(Duration::from_millis(200)),
        fuel: 0,
        ..limits()
    };
    for _ in 0..2 {
        assert_still_works(&sb).await;
        tokio::time::sleep(Duration::from_millis(100)).await; // the ticker goes back to sleep
        let attempt = sb.run(&spin, job(""), &limits, CancellationToken::new());
        let report = tokio::time::timeout(Duration::from_secs(10), attempt)
            .await
            .expect("a spinning guest after an idle spell was never interrupted");
        assert_eq!(
            report.outcome,
            Outcome::Failed(Failure::Timeout(Duration::from_millis(200)))
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_a_spinning_guest_quickly() {
    let sb = sandbox();
    let spin = prepare(&sb, "spin-forever");
    let limits = Limits {
        timeout: None,
        fuel: 0,
        ..limits()
    };
    let cancel = CancellationToken::new();
    let attempt = {
        let (sb, spin, cancel) = (sb.clone(), spin.clone(), cancel.clone());
        tokio::spawn(async move { sb.run(&spin, job(""), &limits, cancel).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cancelled_at = Instant::now();
    cancel.cancel();
    let report = attempt.await.expect("join");
    let stop_latency = cancelled_at.elapsed();
    eprintln!("cancel: stopped {stop_latency:?} after cancel");
    assert_eq!(report.outcome, Outcome::Failed(Failure::Cancelled));
    assert!(
        stop_latency < Duration::from_millis(100),
        "stopped {stop_latency:?} after cancel"
    );
    // The guest was already running when the cancel came: the attempt lasted longer than
    // the time from the cancel to its report. (Not `elapsed >= 300 ms`: on a loaded
    // machine the guest runtime may start the attempt well after the spawn.)
    assert!(
        report.elapsed > stop_latency,
        "attempt {:?}, stopped {stop_latency:?} after cancel",
        report.elapsed
    );
    assert_still_works(&sb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_before_start_never_runs_the_guest() {
    let sb = sandbox();
    let echo = prepare(&sb, "echo");
    let cancel = CancellationToken::new();
    cancel.cancel();
    let report = sb.run(&echo, job("x"), &limits(), cancel).await;
    assert_eq!(report.outcome, Outcome::Failed(Failure::Cancelled));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuel_budget_is_enforced() {
    let sb = sandbox();
    let limits = Limits {
        fuel: 20_000_000,
        timeout: None,
        ..limits()
    };
    let report = run(&sb, "spin-forever", "", &limits).await;
    assert_eq!(
        report.outcome,
        Outcome::Failed(Failure::FuelExhausted(20_000_000))
    );
    assert_eq!(reason(&report), "fuel exhausted (20000000 units)");
    assert_eq!(report.fuel_used, 20_000_000);
    assert_still_works(&sb).await;
}

#[tokio::test]
async fn busy_guests_do_not_starve_the_callers_runtime() {
    // Two spinning guests on the sandbox's runtime; the caller's (single-threaded here)
    // runtime still wakes up on time.
    let sb = sandbox();
    let spin = prepare(&sb, "spin-forever");
    let limits = Limits {
        timeout: Some(Duration::from_millis(600)),
        fuel: 0,
        ..limits()
    };
    let a = sb.run(&spin, job(""), &limits, CancellationToken::new());
    let b = sb.run(&spin, job(""), &limits, CancellationToken::new());
    let ticks = async {
        let mut worst = Duration::ZERO;
        for _ in 0..20 {
            let t = Instant::now();
            tokio::time::sleep(Duration::from_millis(10)).await;
            worst = worst.max(t.elapsed());
        }
        worst
    };
    let (ra, rb, worst) = tokio::join!(a, b, ticks);
    assert!(matches!(ra.outcome, Outcome::Failed(Failure::Timeout(_))));
    assert!(matches!(rb.outcome, Outcome::Failed(Failure::Timeout(_))));
    assert!(
        worst < Duration::from_millis(100),
        "caller's timer late by {worst:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_run_future_stops_the_guest_and_frees_its_slot() {
    // One slot only: if the abandoned guest kept running, `echo` would wait forever.
    let sb = sluice_sandbox::Sandbox::new(sluice_sandbox::SandboxConfig {
        max_concurrency: 1,
        ..config()
    })
    .unwrap();
    let spin = prepare(&sb, "spin-forever");
    let forever = Limits {
        timeout: None,
        fuel: 0,
        ..limits()
    };
    let abandoned = tokio::time::timeout(
        Duration::from_millis(200),
        sb.run(&spin, job(""), &forever, CancellationToken::new()),
    )
    .await;
    assert!(abandoned.is_err(), "spin-forever cannot finish");
    let echo = tokio::time::timeout(Duration::from_secs(5), run(&sb, "echo", "next", &limits()))
        .await
        .expect("the slot was freed");
    assert_eq!(output(&echo), b"next");
}
