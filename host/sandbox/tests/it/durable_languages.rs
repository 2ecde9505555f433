//! Contract 0.3's waits with the samples written in other guest languages, built by
//! `scripts/build-guests python js c` into `sample-tasks/<lang>/build/<name>.wasm`, with the
//! same payload and output as the Rust samples (`durable_waits.rs`). `durable-steps`
//! (`sample-tasks/python/durable_steps.py`, `sample-tasks/js/durable-steps.js`,
//! `sample-tasks/c/durable-steps.c`): a long durable sleep suspends, and the run replayed
//! after the instant completes with each step sent once; a signal awaited before it is sent
//! suspends the run, and the next run, with the signal there, completes; in a type that is
//! not durable the await is refused, and the job fails naming it. `fan-in`
//! (`sample-tasks/python/fan_in.py`, `sample-tasks/js/fan-in.js`, `sample-tasks/c/fan-in.c`):
//! the first run suspends on the await with its children buffered as follow-ups, a replay
//! with some still running suspends again with the same ids, and the replay after the last
//! one finished completes with their outputs; not durable, the await is refused. The
//! components are 0.3 components (the SDKs' durable modules and the build's `contract_of`).

use std::sync::Arc;
use std::time::Duration;

use crate::common::http_server::TestServer;
use crate::common::*;
use crate::durable::{MemorySink, durable, follow_ups, http, opened};
use sluice_sandbox::{
    CancellationToken, ChildOutcome, ChildState, Contract, Grants, Outcome, RunReport, Sandbox,
    Suspension,
};

async fn run_steps(
    sandbox: &Sandbox,
    lang: &str,
    payload: &serde_json::Value,
    grants: Grants,
) -> RunReport {
    run_guest(sandbox, lang, "durable-steps", payload, grants).await
}

async fn run_guest(
    sandbox: &Sandbox,
    lang: &str,
    name: &str,
    payload: &serde_json::Value,
    grants: Grants,
) -> RunReport {
    let component = prepare_guest(sandbox, lang, name);
    assert_eq!(component.contract(), Contract::V0_3, "{lang}/{name}");
    sandbox
        .run_with(
            &component,
            job(&payload.to_string()),
            &limits(),
            grants,
            CancellationToken::new(),
        )
        .await
}

fn text(report: &RunReport) -> String {
    match &report.outcome {
        Outcome::Completed { output } => String::from_utf8_lossy(output).into_owned(),
        other => panic!(
            "expected a completion, got {other:?}; logs:\n{}",
            String::from_utf8_lossy(&report.logs)
        ),
    }
}

async fn a_long_sleep_suspends_and_the_replayed_run_sends_each_step_once(lang: &str) {
    let server = TestServer::start().await;
    let sandbox = opened();
    let payload = serde_json::json!({
        "urls": [server.url("/ok"), server.url("/ok")],
        "sleep_after": { "1": 1500 },
    });
    let grants = |recorded, sink| Grants {
        http: http(&server),
        durable: durable(recorded, sink),
        ..Grants::default()
    };
    let sink = Arc::new(MemorySink::default());
    let first = run_steps(&sandbox, lang, &payload, grants(Vec::new(), &sink)).await;
    let Outcome::Suspended(Suspension::Sleep { until_ms }) = first.outcome else {
        panic!(
            "{lang}: a 1.5 s sleep suspends: {:?}; logs:\n{}",
            first.outcome,
            String::from_utf8_lossy(&first.logs)
        );
    };
    assert_eq!(server.requests().len(), 1, "{lang}: step 1 only");
    let journal = sink.recorded();
    let sleep = journal
        .iter()
        .find(|e| e.kind == "sleep")
        .unwrap_or_else(|| panic!("{lang}: the instant is journaled: {journal:?}"));
    assert_eq!(sleep.request, "1500ms", "{lang}");
    assert_eq!(sleep.result, until_ms.to_be_bytes(), "{lang}");

    let wait = u64::try_from(until_ms - now_ms()).unwrap_or(0);
    tokio::time::sleep(Duration::from_millis(wait + 100)).await;
    let later_sink = MemorySink::holding(&journal);
    let later = run_steps(&sandbox, lang, &payload, grants(journal, &later_sink)).await;
    assert_eq!(text(&later), r#"["hello","hello"]"#, "{lang}");
    assert_eq!(
        server.requests().len(),
        2,
        "{lang}: step 1 once (replayed), step 2 once"
    );
}

fn now_ms() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    i64::try_from(since.as_millis()).unwrap()
}

async fn an_awaited_signal_suspends_and_the_next_run_takes_it(lang: &str) {
    let server = TestServer::start().await;
    let sandbox = opened();
    let payload = serde_json::json!({
        "urls": [server.url("/ok"), server.url("/ok")],
        "signal_before": { "2": "approve" },
    });
    let grants = |recorded, sink| Grants {
        http: http(&server),
        durable: durable(recorded, sink),
        ..Grants::default()
    };
    let sink = Arc::new(MemorySink::default());
    let first = run_steps(&sandbox, lang, &payload, grants(Vec::new(), &sink)).await;
    assert_eq!(
        first.outcome,
        Outcome::Suspended(Suspension::Signal {
            name: "approve".into(),
            deadline_ms: None
        }),
        "{lang}: logs:\n{}",
        String::from_utf8_lossy(&first.logs)
    );
    assert_eq!(server.requests().len(), 1, "{lang}");

    let journal = sink.recorded();
    let second_sink = MemorySink::holding(&journal);
    second_sink
        .signals
        .lock()
        .unwrap()
        .push(("approve".into(), br#"{"by":"ana"}"#.to_vec(), None));
    let second = run_steps(
        &sandbox,
        lang,
        &payload,
        grants(journal.clone(), &second_sink),
    )
    .await;
    assert_eq!(text(&second), r#"["hello","hello"]"#, "{lang}");
    assert_eq!(server.requests().len(), 2, "{lang}");
    let taken_at = second_sink.signals.lock().unwrap()[0].2;
    assert_eq!(taken_at, Some(journal.len() as u32), "{lang}");
    let entries = second_sink.recorded();
    let signal = entries
        .iter()
        .find(|e| e.kind == "signal")
        .unwrap_or_else(|| panic!("{lang}: the signal is journaled: {entries:?}"));
    assert_eq!(signal.request, "approve", "{lang}");

    // Not durable: the await is refused and the job fails (fatal) naming it.
    let plain = run_steps(
        &sandbox,
        lang,
        &serde_json::json!({ "urls": [server.url("/ok")], "signal_before": { "1": "approve" } }),
        Grants {
            http: http(&server),
            ..Grants::default()
        },
    )
    .await;
    let Outcome::Failed(failure) = &plain.outcome else {
        panic!("{lang}: not durable, the await fails: {:?}", plain.outcome);
    };
    assert!(failure.is_fatal(), "{lang}: {}", failure.reason());
    assert!(
        failure.reason().contains("durable"),
        "{lang}: {}",
        failure.reason()
    );
    assert_eq!(server.requests().len(), 2, "{lang}: nothing sent");
}

async fn a_parent_suspends_until_its_children_have_finished_then_gets_their_outcomes(lang: &str) {
    let sandbox = sandbox();
    let payload = serde_json::json!({ "children": 3 });
    let grants = |recorded, sink| Grants {
        follow_ups: follow_ups(),
        durable: durable(recorded, sink),
        ..Grants::default()
    };
    let sink = Arc::new(MemorySink::default());
    let first = run_guest(
        &sandbox,
        lang,
        "fan-in",
        &payload,
        grants(Vec::new(), &sink),
    )
    .await;
    assert_eq!(
        first.outcome,
        Outcome::Suspended(Suspension::Jobs {
            ids: vec![100, 101, 102]
        }),
        "{lang}: logs:\n{}",
        String::from_utf8_lossy(&first.logs)
    );
    let ids: Vec<Option<u64>> = first.follow_ups.iter().map(|f| f.id).collect();
    assert_eq!(
        ids,
        [Some(100), Some(101), Some(102)],
        "{lang}: the suspension carries the children"
    );
    let payloads: Vec<serde_json::Value> = first
        .follow_ups
        .iter()
        .map(|f| serde_json::from_slice(&f.payload).unwrap())
        .collect();
    assert_eq!(
        payloads,
        [
            serde_json::json!({ "i": 0 }),
            serde_json::json!({ "i": 1 }),
            serde_json::json!({ "i": 2 })
        ],
        "{lang}"
    );
    assert!(
        first.follow_ups.iter().all(|f| f.job_type == "echo"),
        "{lang}: the default child type"
    );

    let journal = sink.recorded();
    let second_sink = MemorySink::holding(&journal);
    let done = |text: &str| ChildOutcome {
        state: ChildState::Completed,
        output: Some(text.as_bytes().to_vec()),
        error: None,
    };
    *second_sink.finished.lock().unwrap() = vec![(100, done("a")), (101, done("b"))];
    // One child still running: the replayed run suspends again, with the same ids.
    let second = run_guest(
        &sandbox,
        lang,
        "fan-in",
        &payload,
        grants(journal.clone(), &second_sink),
    )
    .await;
    assert_eq!(second.outcome, first.outcome, "{lang}");
    let again: Vec<Option<u64>> = second.follow_ups.iter().map(|f| f.id).collect();
    assert_eq!(again, ids, "{lang}: replayed enqueues keep their ids");

    second_sink.finished.lock().unwrap().push((
        102,
        ChildOutcome {
            state: ChildState::Dead,
            output: None,
            error: Some("guest fatal: no".into()),
        },
    ));
    let third = run_guest(
        &sandbox,
        lang,
        "fan-in",
        &payload,
        grants(journal, &second_sink),
    )
    .await;
    let result: serde_json::Value = serde_json::from_str(&text(&third)).unwrap();
    assert_eq!(
        result,
        serde_json::json!({ "completed": 2, "outputs": ["a", "b", null] }),
        "{lang}"
    );
    assert_eq!(
        third.follow_ups.len(),
        3,
        "{lang}: the completion carries them again (inserted once)"
    );

    let plain = run_guest(
        &sandbox,
        lang,
        "fan-in",
        &serde_json::json!({ "children": 1 }),
        Grants {
            follow_ups: follow_ups(),
            ..Grants::default()
        },
    )
    .await;
    let Outcome::Failed(failure) = &plain.outcome else {
        panic!("{lang}: not durable, the await fails: {:?}", plain.outcome);
    };
    assert!(failure.is_fatal(), "{lang}: {}", failure.reason());
    assert!(
        failure.reason().contains("not-durable"),
        "{lang}: {}",
        failure.reason()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn python_a_long_sleep_suspends_and_the_replayed_run_sends_each_step_once() {
    a_long_sleep_suspends_and_the_replayed_run_sends_each_step_once("python").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_an_awaited_signal_suspends_and_the_next_run_takes_it() {
    an_awaited_signal_suspends_and_the_next_run_takes_it("python").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn js_a_long_sleep_suspends_and_the_replayed_run_sends_each_step_once() {
    a_long_sleep_suspends_and_the_replayed_run_sends_each_step_once("js").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn js_an_awaited_signal_suspends_and_the_next_run_takes_it() {
    an_awaited_signal_suspends_and_the_next_run_takes_it("js").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn c_a_long_sleep_suspends_and_the_replayed_run_sends_each_step_once() {
    a_long_sleep_suspends_and_the_replayed_run_sends_each_step_once("c").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn c_an_awaited_signal_suspends_and_the_next_run_takes_it() {
    an_awaited_signal_suspends_and_the_next_run_takes_it("c").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_fan_in_suspends_until_its_children_have_finished_then_gets_their_outcomes() {
    a_parent_suspends_until_its_children_have_finished_then_gets_their_outcomes("python").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn js_fan_in_suspends_until_its_children_have_finished_then_gets_their_outcomes() {
    a_parent_suspends_until_its_children_have_finished_then_gets_their_outcomes("js").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn c_fan_in_suspends_until_its_children_have_finished_then_gets_their_outcomes() {
    a_parent_suspends_until_its_children_have_finished_then_gets_their_outcomes("c").await;
}
