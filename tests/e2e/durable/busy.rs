//! `snooze_when_busy` on a real worker, in every SDK (issue #38): the `durable-steps`
//! sample (Rust, Python, JavaScript, C) with `snooze_when_busy_ms` POSTs to the receiver,
//! which answers step 1 as a busy API first (a 429 or 503, with `Retry-After: 1` or none)
//! and `200` after. The job snoozes instead of failing: it completes on attempt 1, its
//! `snoozes` count the busy answers, its attempts are `suspended` runs then `completed`,
//! and each request for step 1 arrived at least the asked delay after the one before.
//! The parsing itself is tested per language in the sandbox (`tests/it/retry_after.rs`).

use std::time::Duration;

use serde_json::json;
use sqlx::PgPool;

use super::receiver::{Busy, Receiver};
use super::{WORKER, finished, type_args};
use crate::support::worker_process::WorkerProcess;
use crate::support::{Sluice, enqueue};

/// One case: the language, whether the type is durable, how step 1 is busy, the sample's
/// default (ms), and the least gap between two requests for step 1.
struct Case {
    lang: &'static str,
    durable: bool,
    status: &'static str,
    times: usize,
    retry_after: Option<&'static str>,
    default_ms: u64,
    gap: Duration,
}

async fn snoozes_while_busy(pool: &PgPool, case: Case) {
    let lang = case.lang;
    let receiver = Receiver::start();
    receiver.busy(Busy {
        step: 1,
        times: case.times,
        status: case.status,
        retry_after: case.retry_after.map(str::to_owned),
    });
    let extra: &[&str] = if case.durable { &["--durable"] } else { &[] };
    let args = type_args(&receiver, "10ms", extra);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let sluice = if lang == "rust" {
        let sluice = Sluice::migrated(pool);
        sluice.define("steps", "durable-steps", &args);
        sluice
    } else {
        let sluice = Sluice::for_guests(pool);
        sluice.define_guest(lang, "durable-steps", "steps", &args);
        sluice
    };
    let id = enqueue(
        &sluice,
        "steps",
        json!({ "urls": receiver.urls(2), "snooze_when_busy_ms": case.default_ms }),
    );
    let worker = WorkerProcess::spawn(&sluice, "w1", WORKER);
    let job = finished(&sluice, &id, &worker);
    assert_eq!(job["state"], "completed", "{lang}: {job}");
    assert_eq!(
        job["attempt"], 1,
        "{lang}: a snooze spends no attempt: {job}"
    );
    assert_eq!(job["snoozes"], case.times, "{lang}: {job}");
    assert_eq!(job["output"], json!(["step-1", "step-2"]), "{lang}: {job}");
    let attempts = sluice.json(&["jobs", "attempts", &id]);
    let outcomes: Vec<&str> = attempts
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["outcome"].as_str().unwrap_or(""))
        .collect();
    let mut expected = vec!["suspended"; case.times];
    expected.push("completed");
    assert_eq!(outcomes, expected, "{lang}: {attempts}");
    let arrivals = receiver.arrivals(1);
    assert_eq!(
        arrivals.len(),
        case.times + 1,
        "{lang}: step 1 sent again after each snooze"
    );
    for pair in arrivals.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(
            gap >= case.gap,
            "{lang}: step 1 was sent again {gap:?} after a busy answer, before {:?}",
            case.gap
        );
    }
    assert_eq!(receiver.arrivals(2).len(), 1, "{lang}: step 2 once");
}

/// Rust, durable: `429` with `Retry-After: 1` twice, then `200`.
#[sqlx::test(migrations = false)]
async fn rust_snoozes_for_retry_after_on_a_429(pool: PgPool) {
    let case = Case {
        lang: "rust",
        durable: true,
        status: "429 Too Many Requests",
        times: 2,
        retry_after: Some("1"),
        default_ms: 30_000,
        gap: Duration::from_secs(1),
    };
    snoozes_while_busy(&pool, case).await;
}

/// Python, not durable (each run starts over): `429` with `Retry-After: 1`.
#[sqlx::test(migrations = false)]
async fn python_snoozes_for_retry_after_on_a_429(pool: PgPool) {
    let case = Case {
        lang: "python",
        durable: false,
        status: "429 Too Many Requests",
        times: 1,
        retry_after: Some("1"),
        default_ms: 30_000,
        gap: Duration::from_secs(1),
    };
    snoozes_while_busy(&pool, case).await;
}

/// JavaScript, durable: `503` without `Retry-After`: the default, 1.2 s.
#[sqlx::test(migrations = false)]
async fn js_snoozes_for_the_default_on_a_503_without_retry_after(pool: PgPool) {
    let case = Case {
        lang: "js",
        durable: true,
        status: "503 Service Unavailable",
        times: 1,
        retry_after: None,
        default_ms: 1_200,
        gap: Duration::from_millis(1_200),
    };
    snoozes_while_busy(&pool, case).await;
}

/// C, durable: `429` without `Retry-After` twice: the default, 1 s, each time.
#[sqlx::test(migrations = false)]
async fn c_snoozes_for_the_default_on_a_429_without_retry_after(pool: PgPool) {
    let case = Case {
        lang: "c",
        durable: true,
        status: "429 Too Many Requests",
        times: 2,
        retry_after: None,
        default_ms: 1_000,
        gap: Duration::from_secs(1),
    };
    snoozes_while_busy(&pool, case).await;
}
