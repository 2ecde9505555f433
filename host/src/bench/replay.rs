//! `sluice bench replay`: what one journaled host call costs a durable job's later
//! attempt. The Rust `durable-steps` sample posts to `calls` URLs of a local receiver; each
//! iteration times three runs of it in a durable sandbox: with no URL (the run's fixed
//! cost), live (each request sent and journaled), and replayed from that journal (no
//! request leaves the host). Per call: (run − empty run) / calls. The journal sink keeps
//! entries in memory: this is the sandbox's side of a replay; a worker also reads the
//! journal once per attempt (one indexed statement, `host/store/sql/journal/load.sql`).

use std::future::ready;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context, ensure};
use serde_json::json;
use sluice_egress::{AllowList, Grant, NetworkPolicy};
use sluice_sandbox::{
    ChildOutcome, DurableGrant, EgressConfig, Grants, HttpGrant, JobInput, JournalEntry,
    JournalSink, Limits, Outcome, PersistFuture, Sandbox, SandboxConfig, TaskComponent, WaitFuture,
};
use tokio_util::sync::CancellationToken;

use super::percentile;
use super::receiver::Receiver;

/// A journal kept in memory; no signals, no children.
#[derive(Default)]
struct MemorySink(Mutex<Vec<JournalEntry>>);

impl JournalSink for MemorySink {
    fn persist<'a>(&'a self, entries: &'a [JournalEntry]) -> PersistFuture<'a> {
        self.0.lock().unwrap().extend_from_slice(entries);
        Box::pin(ready(Ok(())))
    }

    fn take_signal<'a>(&'a self, _name: &'a str, _seq: u32) -> WaitFuture<'a, Option<Vec<u8>>> {
        Box::pin(ready(Ok(None)))
    }

    fn children<'a>(&'a self, ids: &'a [u64]) -> WaitFuture<'a, Vec<Option<ChildOutcome>>> {
        Box::pin(ready(Ok(vec![None; ids.len()])))
    }
}

/// One timed run of `durable-steps` over `urls`, replaying `recorded`; its journal after.
struct Run<'a> {
    sandbox: &'a Sandbox,
    component: &'a TaskComponent,
    http: Arc<HttpGrant>,
}

impl Run<'_> {
    async fn time(
        &self,
        urls: &[String],
        recorded: Vec<JournalEntry>,
    ) -> anyhow::Result<(f64, Vec<JournalEntry>)> {
        let sink = Arc::new(MemorySink::default());
        let grants = Grants {
            http: Some(self.http.clone()),
            durable: Some(Arc::new(DurableGrant {
                job_id: 1,
                recorded,
                sink: sink.clone(),
            })),
            ..Grants::default()
        };
        let job = JobInput {
            id: 1,
            job_type: "durable-steps".into(),
            tenant: "bench".into(),
            attempt: 1,
            max_attempts: 1,
            payload: json!({ "urls": urls }).to_string().into_bytes(),
            trace: None,
        };
        let limits = Limits::default();
        let started = Instant::now();
        let report = self
            .sandbox
            .run_with(
                self.component,
                job,
                &limits,
                grants,
                CancellationToken::new(),
            )
            .await;
        let micros = started.elapsed().as_secs_f64() * 1e6;
        ensure!(
            matches!(report.outcome, Outcome::Completed { .. }),
            "durable-steps did not complete: {:?}",
            report.outcome
        );
        let journal = std::mem::take(&mut *sink.0.lock().unwrap());
        Ok((micros, journal))
    }
}

pub async fn replay(
    steps: &[u8],
    calls: usize,
    iterations: usize,
) -> anyhow::Result<serde_json::Value> {
    ensure!(calls > 0, "--calls must be at least 1");
    let receiver = Receiver::start()?;
    let loopback = NetworkPolicy::parse(["127.0.0.1/32"]).context("loopback")?;
    let sandbox = Sandbox::new(SandboxConfig {
        cache_dir: Some(std::env::temp_dir().join("sluice-bench-cache")),
        egress: EgressConfig {
            networks: loopback.clone(),
            ..EgressConfig::default()
        },
        ..SandboxConfig::default()
    })?;
    let component = sandbox.prepare(&sluice_sandbox::sha256_hex(steps), steps)?;
    let allow = AllowList::parse_with(std::slice::from_ref(&receiver.origin), &loopback)
        .context("the receiver's origin")?;
    let run = Run {
        sandbox: &sandbox,
        component: &component,
        http: Arc::new(HttpGrant {
            grant: Grant::new(allow),
            max_requests: u32::try_from(calls).unwrap_or(u32::MAX),
            recorded: None,
        }),
    };
    let urls: Vec<String> = (0..calls)
        .map(|i| format!("{}/{i}", receiver.origin))
        .collect();
    eprintln!("{iterations} rounds of durable-steps: no call, {calls} live, {calls} replayed");
    let (mut empty, mut live, mut replayed) = (Vec::new(), Vec::new(), Vec::new());
    let mut entries = 0;
    for _ in 0..iterations {
        empty.push(run.time(&[], Vec::new()).await?.0);
        let (micros, journal) = run.time(&urls, Vec::new()).await?;
        live.push(micros);
        entries = journal.len();
        let sent = receiver.answered();
        let (micros, again) = run.time(&urls, journal).await?;
        replayed.push(micros);
        ensure!(receiver.answered() == sent, "a replayed run sent a request");
        ensure!(again.is_empty(), "a full replay journals nothing new");
    }
    for samples in [&mut empty, &mut live, &mut replayed] {
        samples.sort_by(f64::total_cmp);
    }
    let p50 = |s: &[f64]| percentile(s, 50.0);
    let per_call = |s: &[f64]| (p50(s) - p50(&empty)) / calls as f64;
    Ok(json!({
        "cmd": "replay", "calls": calls, "journal_entries": entries, "iterations": iterations,
        "empty_p50_us": p50(&empty), "live_p50_us": p50(&live), "replay_p50_us": p50(&replayed),
        "live_per_call_us": per_call(&live), "replay_per_call_us": per_call(&replayed),
    }))
}
