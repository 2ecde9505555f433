//! What a guest hands back from `run` is recorded as what it is: a `fatal` stays fatal
//! and a `retry` stays a retry whatever the message (huge ones truncated, non-UTF-8 ones
//! shown lossily and marked), only the `ok` bytes count against the output limit, and a
//! result that breaks the canonical ABI names what is wrong with it. The `bad-result`
//! sample builds each of these by hand (see `sample-tasks/bad-result`).

use crate::common::*;
use sluice_sandbox::{CancellationToken, Failure, Limits, Outcome, RunReport, Sandbox};

fn mode(mode: &str) -> String {
    format!(r#"{{"mode":"{mode}"}}"#)
}

async fn bad_result(sb: &Sandbox, payload: &str) -> RunReport {
    run(sb, "bad-result", payload, &limits()).await
}

fn failure(report: &RunReport) -> &Failure {
    report
        .outcome
        .failure()
        .unwrap_or_else(|| panic!("expected a failure, got {:?}", report.outcome))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ten_megabyte_fatal_message_stays_fatal_and_is_truncated() {
    let sb = sandbox();
    let report = bad_result(&sb, &mode("huge-fatal")).await;
    let Outcome::Failed(Failure::GuestFatal(message)) = &report.outcome else {
        panic!("expected guest fatal, got {:?}", report.outcome);
    };
    assert!(
        message.starts_with("payment declined: xxx"),
        "{message:.80}"
    );
    // 4096 bytes kept of 10 000 000.
    assert!(
        message.ends_with("x… (9,995,904 bytes dropped)"),
        "{}",
        &message[message.len() - 60..]
    );
    assert!(failure(&report).is_fatal());
    assert_still_works(&sb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_retry_message_stays_a_retry_and_is_truncated() {
    let sb = sandbox();
    let report = bad_result(&sb, r#"{"mode":"huge-retry","bytes":5000}"#).await;
    let Outcome::Failed(Failure::GuestRetry(message)) = &report.outcome else {
        panic!("expected guest retry, got {:?}", report.outcome);
    };
    assert!(message.starts_with("gateway busy: xxx"), "{message:.80}");
    assert!(message.ends_with("x… (904 bytes dropped)"), "{message}");
    assert!(!failure(&report).is_fatal());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_messages_that_are_not_utf8_are_shown_lossily_and_keep_their_kind() {
    let sb = sandbox();
    let marker = " [not valid UTF-8: invalid bytes shown as U+FFFD]";
    let report = bad_result(&sb, &mode("bad-utf8-fatal")).await;
    assert_eq!(
        report.outcome,
        Outcome::Failed(Failure::GuestFatal(format!(
            "card \u{FFFD}\u{FFFD} declined{marker}"
        )))
    );
    let report = bad_result(&sb, &mode("bad-utf8-retry")).await;
    assert_eq!(
        report.outcome,
        Outcome::Failed(Failure::GuestRetry(format!(
            "gateway \u{FFFD} busy{marker}"
        )))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fatal_whose_message_lies_outside_memory_is_still_fatal() {
    let sb = sandbox();
    let report = bad_result(&sb, &mode("oob-message-fatal")).await;
    let reason = failure(&report).reason();
    assert!(failure(&report).is_fatal(), "{reason}");
    assert!(
        reason.starts_with(
            "guest fatal: [unreadable: string at 0xfffffff0 of 64 bytes is outside linear memory ("
        ),
        "{reason}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_results_name_what_is_wrong_with_them() {
    let sb = sandbox();
    let cases = [
        (
            "bad-result-tag",
            "trap: invalid result from guest: result tag 7 (expected 0 = ok or 1 = err)",
        ),
        (
            "bad-error-tag",
            "trap: invalid result from guest: task-error tag 5 (expected 0 = retry or 1 = fatal)",
        ),
        (
            "oob-output",
            "trap: invalid result from guest: output list at 0xfffffff0 of 64 bytes is outside linear memory (",
        ),
        (
            "oob-retptr",
            "trap: invalid result from guest: pointer out of bounds of memory",
        ),
        (
            "misaligned-retptr",
            "trap: invalid result from guest: return pointer not aligned",
        ),
    ];
    for (mode_name, want) in cases {
        let report = bad_result(&sb, &mode(mode_name)).await;
        let failure = failure(&report);
        assert!(
            failure.reason().starts_with(want),
            "{mode_name}: {}",
            failure.reason()
        );
        assert!(!failure.is_fatal(), "{mode_name}");
    }
    assert_still_works(&sb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_allocation_while_passing_the_job_in_names_itself() {
    let sb = sandbox();
    // `bad-result`'s `cabi_realloc` answers a request for exactly 2989 bytes (the
    // payload's length) with a pointer outside memory.
    let padded = |len: usize| {
        let base = r#"{"mode":"ok","pad":""}"#;
        let mut payload = base.to_owned();
        payload.insert_str(base.len() - 2, &"p".repeat(len - base.len()));
        payload
    };
    let report = bad_result(&sb, &padded(2989)).await;
    assert_eq!(
        failure(&report).reason(),
        "trap: invalid allocation from guest while passing the job in: \
         realloc return: beyond end of memory"
    );
    // One byte less and the same guest runs.
    let report = bad_result(&sb, &padded(2988)).await;
    assert_eq!(output(&report), b"fine");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_ok_bytes_count_against_the_output_limit() {
    let sb = sandbox();
    let small = Limits {
        output_bytes: 1000,
        ..limits()
    };
    let component = prepare(&sb, "huge-output");
    let report = sb
        .run(
            &component,
            job(r#"{"bytes":1001}"#),
            &small,
            CancellationToken::new(),
        )
        .await;
    assert_eq!(failure(&report).reason(), "output too large (1000 bytes)");
    // A 5000-byte message under the same 1000-byte output limit is kept (truncated to
    // 4096), not refused as output.
    let component = prepare(&sb, "bad-result");
    let report = sb
        .run(
            &component,
            job(r#"{"mode":"huge-fatal","bytes":5000}"#),
            &small,
            CancellationToken::new(),
        )
        .await;
    assert!(failure(&report).is_fatal(), "{:?}", report.outcome);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_log_call_past_the_host_call_cap_traps_and_below_it_is_truncated() {
    let sb = sandbox();
    // Default limits: 64 KiB of log kept; one transfer may carry 1 MiB (output limit) +
    // 1 MiB.
    let report = bad_result(&sb, r#"{"mode":"huge-log","bytes":2000000}"#).await;
    assert_eq!(output(&report), b"logged");
    assert!(report.logs_truncated);
    assert_eq!(report.logs.len() as u64, limits().log_bytes);
    let report = bad_result(&sb, r#"{"mode":"huge-log","bytes":3000000}"#).await;
    let reason = failure(&report).reason();
    assert!(
        reason.starts_with("trap: host call failed: too much data is being copied"),
        "{reason}"
    );
    assert_still_works(&sb).await;
}
