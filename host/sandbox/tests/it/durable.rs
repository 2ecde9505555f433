//! Durable attempts (`docs/durable.md`) with real guests: a second run with the first
//! run's journal gets the same clock reads and random bytes (`clock`), and the same HTTP
//! responses without any request reaching the server (`durable-steps`); a run whose
//! call differs from the recorded one ends `fatal` naming both; a sink that refuses (over
//! the cap) stops the attempt. The sink here keeps entries in memory, as the worker's
//! keeps them in PostgreSQL; `follow_ups` grants follow-up jobs numbered from 100 (the
//! store's reserved ids). Both are shared with `durable_waits` and `durable_languages`.

use std::sync::{Arc, Mutex};

use crate::common::http_server::TestServer;
use crate::common::*;
use sluice_egress::{AllowList, Grant, NetworkPolicy};
use sluice_sandbox::{
    CancellationToken, CheckFuture, ChildOutcome, DurableGrant, EgressConfig, Failure, FollowUp,
    FollowUpCheck, FollowUpGrant, Grants, HttpGrant, JournalEntry, JournalError, JournalSink,
    Outcome, PersistFuture, ReserveFuture, RunReport, Sandbox, SandboxConfig, WaitFuture,
};

/// A signal sent to the job: (name, payload, the call that took it).
pub(crate) type SentSignal = (String, Vec<u8>, Option<u32>);

/// Appends in memory, refusing an append that would pass `cap` entries; signals sent and
/// children finished are kept in memory too.
#[derive(Default)]
pub(crate) struct MemorySink {
    pub(crate) entries: Mutex<Vec<JournalEntry>>,
    cap: Option<usize>,
    /// (name, payload, taken at seq).
    pub(crate) signals: Mutex<Vec<SentSignal>>,
    /// (id, outcome) of finished children.
    pub(crate) finished: Mutex<Vec<(u64, ChildOutcome)>>,
}

impl JournalSink for MemorySink {
    fn persist<'a>(&'a self, entries: &'a [JournalEntry]) -> PersistFuture<'a> {
        Box::pin(async move {
            let mut kept = self.entries.lock().unwrap();
            if self.cap.is_some_and(|cap| kept.len() + entries.len() > cap) {
                return Err(JournalError::OverCap("over its cap of N entries".into()));
            }
            assert_eq!(
                entries.first().map(|e| e.seq as usize),
                Some(kept.len()),
                "appends continue the journal"
            );
            kept.extend_from_slice(entries);
            Ok(())
        })
    }

    fn take_signal<'a>(&'a self, name: &'a str, seq: u32) -> WaitFuture<'a, Option<Vec<u8>>> {
        Box::pin(async move {
            let mut signals = self.signals.lock().unwrap();
            let again = signals.iter().position(|s| s.0 == name && s.2 == Some(seq));
            let oldest = || signals.iter().position(|s| s.0 == name && s.2.is_none());
            let Some(at) = again.or_else(oldest) else {
                return Ok(None);
            };
            signals[at].2 = Some(seq);
            Ok(Some(signals[at].1.clone()))
        })
    }

    fn children<'a>(&'a self, ids: &'a [u64]) -> WaitFuture<'a, Vec<Option<ChildOutcome>>> {
        Box::pin(async move {
            let finished = self.finished.lock().unwrap();
            Ok(ids
                .iter()
                .map(|id| finished.iter().find(|f| f.0 == *id).map(|f| f.1.clone()))
                .collect())
        })
    }
}

impl MemorySink {
    /// A sink that holds `journal` already, as the database does for the next run.
    pub(crate) fn holding(journal: &[JournalEntry]) -> Arc<MemorySink> {
        let sink = MemorySink::default();
        *sink.entries.lock().unwrap() = journal.to_vec();
        Arc::new(sink)
    }

    /// The journal as it stands.
    pub(crate) fn recorded(&self) -> Vec<JournalEntry> {
        self.entries.lock().unwrap().clone()
    }
}

pub(crate) fn durable(
    recorded: Vec<JournalEntry>,
    sink: &Arc<MemorySink>,
) -> Option<Arc<DurableGrant>> {
    Some(Arc::new(DurableGrant {
        job_id: 7,
        recorded,
        sink: sink.clone(),
    }))
}

pub(crate) fn opened() -> Sandbox {
    Sandbox::new(SandboxConfig {
        egress: EgressConfig {
            networks: NetworkPolicy::parse(["127.0.0.1/32"]).unwrap(),
            ..EgressConfig::default()
        },
        ..config()
    })
    .unwrap()
}

pub(crate) fn http(server: &TestServer) -> Option<Arc<HttpGrant>> {
    let loopback = NetworkPolicy::parse(["127.0.0.1/32"]).unwrap();
    Some(Arc::new(HttpGrant {
        grant: Grant::new(AllowList::parse_with(&[server.origin()], &loopback).unwrap()),
        max_requests: 10,
        recorded: None,
    }))
}

/// Accepts every follow-up and numbers them from 100.
#[derive(Default)]
pub(crate) struct Numbering(std::sync::atomic::AtomicU64);

impl FollowUpCheck for Numbering {
    fn check<'a>(&'a self, _: &'a FollowUp) -> CheckFuture<'a> {
        Box::pin(async { Ok(()) })
    }

    fn reserve_id(&self) -> ReserveFuture<'_> {
        let id = 100 + self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Box::pin(async move { Ok(id) })
    }
}

pub(crate) fn follow_ups() -> Option<Arc<FollowUpGrant>> {
    Some(Arc::new(FollowUpGrant {
        max_count: 100,
        max_bytes: 1 << 20,
        check: Arc::new(Numbering::default()),
    }))
}

async fn steps(sandbox: &Sandbox, urls: &[String], grants: Grants) -> RunReport {
    let component = prepare(sandbox, "durable-steps");
    let payload = serde_json::json!({ "urls": urls }).to_string();
    sandbox
        .run_with(
            &component,
            job(&payload),
            &limits(),
            grants,
            CancellationToken::new(),
        )
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replay_reads_the_recorded_clock_and_random_and_records_nothing_new() {
    let sandbox = sandbox();
    let component = prepare(&sandbox, "clock");
    let first_sink = Arc::new(MemorySink::default());
    let grants = |recorded, sink| Grants {
        durable: durable(recorded, sink),
        ..Grants::default()
    };
    let first = sandbox
        .run_with(
            &component,
            job("{}"),
            &limits(),
            grants(Vec::new(), &first_sink),
            CancellationToken::new(),
        )
        .await;
    let recorded = first_sink.entries.lock().unwrap().clone();
    assert!(
        recorded.iter().any(|e| e.kind == "wall-clock"),
        "the clock read is journaled: {recorded:?}"
    );
    std::thread::sleep(std::time::Duration::from_millis(5));

    let second_sink = Arc::new(MemorySink::default());
    let second = sandbox
        .run_with(
            &component,
            job("{}"),
            &limits(),
            grants(recorded.clone(), &second_sink),
            CancellationToken::new(),
        )
        .await;
    assert_eq!(
        output(&second),
        output(&first),
        "the same instant, replayed"
    );
    assert!(
        second_sink.entries.lock().unwrap().is_empty(),
        "nothing new to record"
    );
    let counts = second
        .journal
        .expect("a durable attempt reports its journal");
    assert_eq!(counts.replayed as usize, recorded.len());
    assert_eq!(counts.recorded, 0);

    // Not durable: a fresh clock, no journal.
    let plain = sandbox
        .run(&component, job("{}"), &limits(), CancellationToken::new())
        .await;
    assert_ne!(output(&plain), output(&first));
    assert!(plain.journal.is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replay_answers_http_from_the_journal_without_sending_and_a_changed_url_diverges() {
    let server = TestServer::start().await;
    let sandbox = opened();
    let urls = vec![server.url("/ok"), server.url("/ok")];
    let sink = Arc::new(MemorySink::default());
    let grants = |recorded, sink| Grants {
        http: http(&server),
        durable: durable(recorded, sink),
        ..Grants::default()
    };
    let first = steps(&sandbox, &urls, grants(Vec::new(), &sink)).await;
    assert_eq!(
        output(&first),
        br#"["hello","hello"]"#,
        "{}",
        reason(&first)
    );
    assert_eq!(server.requests().len(), 2);
    let recorded = sink.entries.lock().unwrap().clone();
    let http_entries: Vec<&JournalEntry> = recorded.iter().filter(|e| e.kind == "http").collect();
    assert_eq!(http_entries.len(), 2, "{recorded:?}");
    assert!(
        http_entries[0]
            .request
            .starts_with("POST http://127.0.0.1:"),
        "{:?}",
        http_entries[0]
    );
    assert_eq!(http_entries[0].summary, "200, 5 bytes");

    let replay_sink = Arc::new(MemorySink::default());
    let second = steps(&sandbox, &urls, grants(recorded.clone(), &replay_sink)).await;
    assert_eq!(output(&second), output(&first));
    assert_eq!(server.requests().len(), 2, "the replay sent nothing");

    // The same journal under another first URL: the call differs from the recorded one.
    let other = vec![server.url("/ok?other"), urls[1].clone()];
    let diverged = steps(
        &sandbox,
        &other,
        grants(recorded, &Arc::new(MemorySink::default())),
    )
    .await;
    let Outcome::Failed(Failure::Journal { reason, fatal }) = &diverged.outcome else {
        panic!("expected a journal failure, got {:?}", diverged.outcome);
    };
    assert!(*fatal, "a divergence is fatal");
    assert!(
        reason.contains("replay diverged at call") && reason.contains("POST http://127.0.0.1"),
        "{reason}"
    );
    assert_eq!(server.requests().len(), 2, "the diverged run sent nothing");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sink_that_refuses_stops_the_attempt_before_its_request_leaves() {
    let server = TestServer::start().await;
    let sandbox = opened();
    // Room for the first response only: journaling it succeeds, the second fails.
    let urls = vec![server.url("/ok"), server.url("/ok")];
    let first = steps(
        &sandbox,
        &urls,
        Grants {
            http: http(&server),
            durable: durable(Vec::new(), &Arc::new(MemorySink::default())),
            ..Grants::default()
        },
    )
    .await;
    assert!(
        matches!(first.outcome, Outcome::Completed { .. }),
        "{}",
        reason(&first)
    );
    let sent = server.requests().len();
    let capped = Arc::new(MemorySink {
        cap: Some(0),
        ..MemorySink::default()
    });
    let report = steps(
        &sandbox,
        &urls,
        Grants {
            http: http(&server),
            durable: durable(Vec::new(), &capped),
            ..Grants::default()
        },
    )
    .await;
    let Outcome::Failed(Failure::Journal { reason, fatal }) = &report.outcome else {
        panic!("expected a journal failure, got {:?}", report.outcome);
    };
    assert!(*fatal && reason.contains("over its cap"), "{reason}");
    assert!(
        server.requests().len() <= sent + 1,
        "at most the first request left"
    );
}
