//! Contract 0.3's waits with real guests (`durable-steps`, `fan-in`, `snoozer`) and the
//! in-memory sink of `durable.rs`: a long durable sleep suspends and the next run, past
//! the instant, continues without repeating a step; a short one sleeps in place; in a
//! type that is not durable a sleep past the timeout fails at once and the awaits say
//! `not-durable`; a signal awaited before it is sent suspends the run, and the next run
//! takes it; a parent's children are reported back (with the ids `enqueue` returned)
//! once they have finished; a snooze suspends, and in a durable type returns on replay.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::http_server::TestServer;
use crate::common::*;
use crate::durable::{MemorySink, durable, follow_ups, http, opened};
use sluice_sandbox::{
    CancellationToken, ChildOutcome, ChildState, Failure, Grants, Limits, Outcome, RunReport,
    Sandbox, Suspension,
};

async fn run_sample(
    sandbox: &Sandbox,
    name: &str,
    payload: serde_json::Value,
    grants: Grants,
    limits: &Limits,
) -> RunReport {
    let component = prepare(sandbox, name);
    sandbox
        .run_with(
            &component,
            job(&payload.to_string()),
            limits,
            grants,
            CancellationToken::new(),
        )
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_sleep_suspends_and_the_next_run_continues_past_it_without_repeating_a_step() {
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
    let first = run_sample(
        &sandbox,
        "durable-steps",
        payload.clone(),
        grants(Vec::new(), &sink),
        &limits(),
    )
    .await;
    let Outcome::Suspended(Suspension::Sleep { until_ms }) = first.outcome else {
        panic!("a 1.5 s sleep suspends: {:?}", first.outcome);
    };
    assert_eq!(server.requests().len(), 1, "step 1 only");
    let journal = sink.recorded();
    let sleep = journal
        .iter()
        .find(|e| e.kind == "sleep")
        .expect("the instant is journaled");
    assert_eq!(sleep.request, "1500ms");
    assert_eq!(sleep.result, until_ms.to_be_bytes());

    // Before the instant, the next run replays to the sleep and suspends again.
    let early_sink = MemorySink::holding(&journal);
    let early = run_sample(
        &sandbox,
        "durable-steps",
        payload.clone(),
        grants(journal.clone(), &early_sink),
        &limits(),
    )
    .await;
    assert_eq!(
        early.outcome,
        Outcome::Suspended(Suspension::Sleep { until_ms })
    );
    assert_eq!(server.requests().len(), 1, "nothing sent again");

    tokio::time::sleep(Duration::from_millis(1600)).await;
    let later_sink = MemorySink::holding(&journal);
    let later = run_sample(
        &sandbox,
        "durable-steps",
        payload,
        grants(journal, &later_sink),
        &limits(),
    )
    .await;
    assert_eq!(output(&later), br#"["hello","hello"]"#);
    assert_eq!(server.requests().len(), 2, "step 1 once, step 2 once");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_short_durable_sleep_sleeps_in_place_and_a_plain_one_past_the_timeout_fails_at_once() {
    let server = TestServer::start().await;
    let sandbox = opened();
    let sink = Arc::new(MemorySink::default());
    let short = serde_json::json!({ "urls": [server.url("/ok")], "sleep_after": { "1": 300 } });
    let began = Instant::now();
    let report = run_sample(
        &sandbox,
        "durable-steps",
        short,
        Grants {
            http: http(&server),
            durable: durable(Vec::new(), &sink),
            ..Grants::default()
        },
        &limits(),
    )
    .await;
    assert_eq!(output(&report), br#"["hello"]"#);
    assert!(began.elapsed() >= Duration::from_millis(300));

    let long = serde_json::json!({ "urls": [server.url("/ok")], "sleep_after": { "1": 60000 } });
    let short_timeout = Limits {
        timeout: Some(Duration::from_secs(5)),
        ..Limits::default()
    };
    let began = Instant::now();
    let report = run_sample(
        &sandbox,
        "durable-steps",
        long,
        Grants {
            http: http(&server),
            ..Grants::default()
        },
        &short_timeout,
    )
    .await;
    let Outcome::Failed(Failure::SleepTooLong(why)) = &report.outcome else {
        panic!("a plain sleep past the timeout fails: {:?}", report.outcome);
    };
    assert!(why.contains("1m") && why.contains("left"), "{why}");
    assert!(!Failure::SleepTooLong(why.clone()).is_fatal());
    assert!(
        began.elapsed() < Duration::from_secs(4),
        "at once, not at the timeout"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_awaited_signal_suspends_the_run_and_the_next_run_takes_it() {
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
    let first = run_sample(
        &sandbox,
        "durable-steps",
        payload.clone(),
        grants(Vec::new(), &sink),
        &limits(),
    )
    .await;
    assert_eq!(
        first.outcome,
        Outcome::Suspended(Suspension::Signal {
            name: "approve".into(),
            deadline_ms: None
        })
    );
    assert_eq!(server.requests().len(), 1);

    let journal = sink.recorded();
    let second_sink = MemorySink::holding(&journal);
    second_sink
        .signals
        .lock()
        .unwrap()
        .push(("approve".into(), br#"{"by":"ana"}"#.to_vec(), None));
    let second = run_sample(
        &sandbox,
        "durable-steps",
        payload,
        grants(journal.clone(), &second_sink),
        &limits(),
    )
    .await;
    assert_eq!(output(&second), br#"["hello","hello"]"#);
    assert_eq!(server.requests().len(), 2);
    let taken_at = second_sink.signals.lock().unwrap()[0].2;
    assert_eq!(
        taken_at,
        Some(journal.len() as u32),
        "taken at the call after the journal"
    );
    let entries = second_sink.recorded();
    let signal = entries
        .iter()
        .find(|e| e.kind == "signal")
        .expect("journaled");
    assert_eq!(
        (signal.request.as_str(), signal.result.as_slice()),
        ("approve", &[&[1u8][..], br#"{"by":"ana"}"#].concat()[..])
    );

    // Not durable: the await is refused and the sample fails with that message.
    let plain = run_sample(
        &sandbox,
        "durable-steps",
        serde_json::json!({ "urls": [server.url("/ok")], "signal_before": { "1": "approve" } }),
        Grants {
            http: http(&server),
            ..Grants::default()
        },
        &limits(),
    )
    .await;
    assert!(reason(&plain).contains("durable"), "{}", reason(&plain));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_parent_suspends_until_its_children_have_finished_then_gets_their_outcomes() {
    let sandbox = sandbox();
    let payload = serde_json::json!({ "children": 3 });
    let sink = Arc::new(MemorySink::default());
    let grants = |recorded, sink| Grants {
        follow_ups: follow_ups(),
        durable: durable(recorded, sink),
        ..Grants::default()
    };
    let first = run_sample(
        &sandbox,
        "fan-in",
        payload.clone(),
        grants(Vec::new(), &sink),
        &limits(),
    )
    .await;
    assert_eq!(
        first.outcome,
        Outcome::Suspended(Suspension::Jobs {
            ids: vec![100, 101, 102]
        })
    );
    let ids: Vec<Option<u64>> = first.follow_ups.iter().map(|f| f.id).collect();
    assert_eq!(
        ids,
        [Some(100), Some(101), Some(102)],
        "the suspension carries them"
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
    let second = run_sample(
        &sandbox,
        "fan-in",
        payload.clone(),
        grants(journal.clone(), &second_sink),
        &limits(),
    )
    .await;
    assert_eq!(second.outcome, first.outcome);
    let again: Vec<Option<u64>> = second.follow_ups.iter().map(|f| f.id).collect();
    assert_eq!(again, ids, "replayed enqueues keep their ids");

    second_sink.finished.lock().unwrap().push((
        102,
        ChildOutcome {
            state: ChildState::Dead,
            output: None,
            error: Some("guest fatal: no".into()),
        },
    ));
    let third = run_sample(
        &sandbox,
        "fan-in",
        payload,
        grants(journal, &second_sink),
        &limits(),
    )
    .await;
    let result: serde_json::Value = serde_json::from_slice(output(&third)).unwrap();
    assert_eq!(result["completed"], 2, "{result}");
    assert_eq!(result["outputs"][0], "a");
    assert_eq!(
        third.follow_ups.len(),
        3,
        "the completion carries them again (inserted once)"
    );

    let plain = run_sample(
        &sandbox,
        "fan-in",
        serde_json::json!({ "children": 1 }),
        Grants {
            follow_ups: follow_ups(),
            ..Grants::default()
        },
        &limits(),
    )
    .await;
    assert!(reason(&plain).contains("durable"), "{}", reason(&plain));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_snooze_suspends_and_in_a_durable_type_returns_on_the_next_run() {
    let sandbox = sandbox();
    let payload = serde_json::json!({ "snoozes": 2, "delay_ms": 250 });
    let snooze = Outcome::Suspended(Suspension::Snooze {
        delay: Duration::from_millis(250),
    });
    let plain = run_sample(
        &sandbox,
        "snoozer",
        payload.clone(),
        Grants::default(),
        &limits(),
    )
    .await;
    assert_eq!(plain.outcome, snooze);

    let mut journal = Vec::new();
    for run in 1..=2 {
        let sink = MemorySink::holding(&journal);
        let report = run_sample(
            &sandbox,
            "snoozer",
            payload.clone(),
            Grants {
                durable: durable(journal.clone(), &sink),
                ..Grants::default()
            },
            &limits(),
        )
        .await;
        assert_eq!(report.outcome, snooze, "run {run}");
        journal = sink.recorded();
    }
    let sink = MemorySink::holding(&journal);
    let last = run_sample(
        &sandbox,
        "snoozer",
        payload,
        Grants {
            durable: durable(journal.clone(), &sink),
            ..Grants::default()
        },
        &limits(),
    )
    .await;
    let text = String::from_utf8_lossy(output(&last)).into_owned();
    assert!(text.starts_with("done after 2 snoozes"), "{text}");
    assert_eq!(journal.iter().filter(|e| e.kind == "snooze").count(), 2);
}
