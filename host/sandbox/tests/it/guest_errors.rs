//! A guest's own `retry` and `fatal` errors map to GuestRetry / GuestFatal with its message.

use crate::common::*;
use sluice_sandbox::{CancellationToken, Failure, Outcome};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flaky_retries_then_succeeds() {
    let sb = sandbox();
    let flaky = prepare(&sb, "flaky");
    let payload = r#"{"succeed_on":3}"#;
    for attempt in 1..=2 {
        let mut j = job(payload);
        j.attempt = attempt;
        let report = sb.run(&flaky, j, &limits(), CancellationToken::new()).await;
        let want = format!("attempt {attempt} of 3 failed on purpose");
        assert_eq!(
            report.outcome,
            Outcome::Failed(Failure::GuestRetry(want.clone()))
        );
        let failure = report.outcome.failure().unwrap();
        assert!(!failure.is_fatal());
        assert_eq!(failure.reason(), format!("guest retry: {want}"));
    }
    let mut j = job(payload);
    j.attempt = 3;
    let report = sb.run(&flaky, j, &limits(), CancellationToken::new()).await;
    assert_eq!(output(&report), b"ok on attempt 3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fatal_is_fatal() {
    let sb = sandbox();
    let report = run(&sb, "fatal", "", &limits()).await;
    let want = "job 42 fails permanently on purpose".to_owned();
    assert_eq!(
        report.outcome,
        Outcome::Failed(Failure::GuestFatal(want.clone()))
    );
    let failure = report.outcome.failure().unwrap();
    assert!(failure.is_fatal());
    assert_eq!(failure.reason(), format!("guest fatal: {want}"));
    assert_still_works(&sb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_reports_fuel_time_and_job_fields() {
    let sb = sandbox();
    let report = run(&sb, "echo", r#"{"hello":"world"}"#, &limits()).await;
    assert_eq!(output(&report), br#"{"hello":"world"}"#);
    assert!(report.fuel_used > 0);
    assert!(report.instantiate_time > std::time::Duration::ZERO);
    assert!(report.elapsed >= report.instantiate_time);
    assert!(!report.logs_truncated);
}
