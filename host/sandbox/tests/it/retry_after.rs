//! `snooze_when_busy` and the `Retry-After` reading behind it, the same in every SDK
//! (issue #38): the `durable-steps` sample of each language (Rust
//! `sample-tasks/durable-steps`, and `sample-tasks/{python,js,c}/durable-steps*`, built by
//! `scripts/build-samples` and `scripts/build-guests python js c`) with
//! `snooze_when_busy_ms` POSTs once to a loopback server that answers a chosen status and
//! `Retry-After`. In a type that is not durable a snooze ends the run, so each run's outcome
//! is the SDK's answer: the snooze it asked for (the header's delay-seconds or IMF-fixdate,
//! a past date as zero, at most an hour; the default for no header, an obsolete date form
//! or anything else), or, for any status but 429 and 503, no snooze at all. The rules are
//! the Rust SDK's (`guest-sdk/src/retry_after.rs`, unit-tested there); here every language
//! must give the same answers, through real components.

use std::ops::RangeInclusive;

use crate::common::http_server::TestServer;
use crate::common::*;
use crate::durable::{http, opened};
use sluice_sandbox::{CancellationToken, Contract, Grants, Outcome, Sandbox, Suspension};

/// The sample's `snooze_when_busy_ms`.
const DEFAULT_MS: u64 = 2_500;
/// One hour, the most any SDK snoozes for a `Retry-After`.
const HOUR_MS: u64 = 3_600_000;

/// What a run must end with.
#[derive(Debug)]
enum Expect {
    /// Suspended for a snooze of this many milliseconds.
    Snooze(RangeInclusive<u64>),
    /// Not busy: the sample's own retry for a non-2xx answer, naming the status.
    Retry(u16),
}

/// `(status, Retry-After, expected)`: the same table for every language.
fn cases() -> Vec<(u16, Option<String>, Expect)> {
    let soon = chrono::Utc::now() + chrono::Duration::seconds(120);
    let in_two_minutes = soon.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
    let exactly = |ms| Expect::Snooze(ms..=ms);
    vec![
        (429, Some("7".into()), exactly(7_000)),
        (503, Some("0".into()), exactly(0)),
        (429, None, exactly(DEFAULT_MS)),
        (503, None, exactly(DEFAULT_MS)),
        // The date is whole seconds, and the guest reads its clock a little later.
        (429, Some(in_two_minutes), Expect::Snooze(115_000..=120_000)),
        (
            503,
            Some("Sun, 06 Nov 1994 08:49:37 GMT".into()),
            exactly(0),
        ),
        (
            429,
            Some("Fri, 01 Jan 2100 00:00:00 GMT".into()),
            exactly(HOUR_MS),
        ),
        (429, Some("86400".into()), exactly(HOUR_MS)),
        (
            429,
            Some("99999999999999999999999".into()),
            exactly(HOUR_MS),
        ),
        // The obsolete forms, and anything else: the default.
        (
            429,
            Some("Sunday, 06-Nov-94 08:49:37 GMT".into()),
            exactly(DEFAULT_MS),
        ),
        (
            503,
            Some("Sun Nov  6 08:49:37 1994".into()),
            exactly(DEFAULT_MS),
        ),
        (
            429,
            Some("Sun, 06 Nov 1994 08:49:37 UTC".into()),
            exactly(DEFAULT_MS),
        ),
        (429, Some("1.5".into()), exactly(DEFAULT_MS)),
        (429, Some("soon".into()), exactly(DEFAULT_MS)),
        // Only 429 and 503 are busy.
        (500, Some("7".into()), Expect::Retry(500)),
        (502, None, Expect::Retry(502)),
        (404, Some("7".into()), Expect::Retry(404)),
    ]
}

/// `/busy/STATUS?retry-after=VALUE`, the value percent-encoded.
fn busy_path(status: u16, retry_after: Option<&str>) -> String {
    match retry_after {
        None => format!("/busy/{status}"),
        Some(value) => {
            let encoded = value
                .replace('%', "%25")
                .replace(' ', "%20")
                .replace(',', "%2C");
            format!("/busy/{status}?retry-after={encoded}")
        }
    }
}

async fn every_sdk_reads_retry_after_alike(lang: &str) {
    let server = TestServer::start().await;
    let sandbox: Sandbox = opened();
    let component = if lang == "rust" {
        prepare(&sandbox, "durable-steps")
    } else {
        prepare_guest(&sandbox, lang, "durable-steps")
    };
    assert_eq!(component.contract(), Contract::V0_3, "{lang}");
    for (status, retry_after, expect) in cases() {
        let url = server.url(&busy_path(status, retry_after.as_deref()));
        let payload = serde_json::json!({ "urls": [url], "snooze_when_busy_ms": DEFAULT_MS });
        let report = sandbox
            .run_with(
                &component,
                job(&payload.to_string()),
                &limits(),
                Grants {
                    http: http(&server),
                    ..Grants::default()
                },
                CancellationToken::new(),
            )
            .await;
        let case = format!("{lang}: {status} with Retry-After {retry_after:?}");
        let logs = String::from_utf8_lossy(&report.logs);
        match (&expect, &report.outcome) {
            (Expect::Snooze(range), Outcome::Suspended(Suspension::Snooze { delay })) => {
                let ms = u64::try_from(delay.as_millis()).unwrap();
                assert!(
                    range.contains(&ms),
                    "{case}: snoozed {delay:?}, not {range:?}"
                );
            }
            (Expect::Retry(status), Outcome::Failed(failure)) => {
                assert!(!failure.is_fatal(), "{case}: {}", failure.reason());
                assert!(
                    failure.reason().contains(&format!("answered {status}")),
                    "{case}: {}",
                    failure.reason()
                );
            }
            (expect, outcome) => {
                panic!("{case}: expected {expect:?}, got {outcome:?}; logs:\n{logs}")
            }
        }
    }
    let sent = server.requests().len();
    assert_eq!(sent, cases().len(), "{lang}: one request per case, no more");
    // Not busy after all: the same sample completes (the helper returned false).
    let payload = serde_json::json!({ "urls": [server.url("/ok")], "snooze_when_busy_ms": 1 });
    let report = sandbox
        .run_with(
            &component,
            job(&payload.to_string()),
            &limits(),
            Grants {
                http: http(&server),
                ..Grants::default()
            },
            CancellationToken::new(),
        )
        .await;
    assert_eq!(output(&report), br#"["hello"]"#, "{lang}");
}

#[tokio::test(flavor = "multi_thread")]
async fn rust_reads_retry_after_as_the_table_says() {
    every_sdk_reads_retry_after_alike("rust").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_reads_retry_after_as_the_table_says() {
    every_sdk_reads_retry_after_alike("python").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn js_reads_retry_after_as_the_table_says() {
    every_sdk_reads_retry_after_alike("js").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn c_reads_retry_after_as_the_table_says() {
    every_sdk_reads_retry_after_alike("c").await;
}
