//! `sluice enqueue`: one job from flags, or many from a JSON-lines file (`--bulk`).
//! `--json` prints `sluice_wire::BatchItem` (`{"id", "created"}`) or
//! `sluice_wire::BulkEnqueued`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use chrono::{DateTime, Utc};
use sluice_store::{Enqueued, KeyScope, NewJob, RunAt, Store, TraceHeaders};

use super::output::Printer;
use super::{Global, read_file};
use sluice_shared::units::parse_duration;
use sluice_wire::{BatchItem, BulkEnqueued};

/// Rows sent per round-trip by `--bulk`.
const BULK_CHUNK: usize = 5_000;

#[derive(Debug, clap::Args)]
pub struct EnqueueArgs {
    /// The job type.
    pub job_type: String,
    /// Payload text (JSON by convention).
    #[arg(long, conflicts_with_all = ["payload_file", "bulk"])]
    pub payload: Option<String>,
    /// Read the payload from a file.
    #[arg(long, conflicts_with = "bulk")]
    pub payload_file: Option<PathBuf>,
    /// Enqueue every line of a JSON-lines file as one job's payload.
    #[arg(long)]
    pub bulk: Option<PathBuf>,
    /// `low`, `medium`, `high`, `critical` or any integer (higher runs first).
    #[arg(long, value_parser = parse_priority, default_value = "medium")]
    pub priority: i32,
    /// Run no earlier than this long from now.
    #[arg(long, value_parser = parse_duration, conflicts_with = "run_at")]
    pub delay: Option<Duration>,
    /// Run no earlier than this RFC 3339 time.
    #[arg(long)]
    pub run_at: Option<DateTime<Utc>>,
    /// Attempts before the job is dead (default: the job type's).
    #[arg(long)]
    pub max_attempts: Option<i32>,
    /// Enqueue at most once per key (per tenant). Names one job: not with --bulk.
    #[arg(long, conflicts_with = "bulk")]
    pub idempotency_key: Option<String>,
    /// `retained`: the key stays taken while the job exists; `unfinished`: it frees when
    /// the job finishes.
    #[arg(
        long,
        value_enum,
        default_value = "retained",
        requires = "idempotency_key"
    )]
    pub key_scope: Scope,
    /// At most the type's `--max-running-per-key` jobs with this key run at once,
    /// fleet-wide, and its `--rate-per-key` applies to them (docs/flow-control.md).
    /// With --bulk, every job of the file gets it.
    #[arg(long, value_name = "KEY")]
    pub concurrency_key: Option<String>,
    /// A W3C `traceparent` (`00-<trace id>-<parent id>-<flags>`): the job's attempts
    /// continue that trace (docs/observability.md). With --bulk, every job of the file.
    #[arg(long, value_name = "TRACEPARENT")]
    pub traceparent: Option<String>,
    /// The W3C `tracestate` that goes with --traceparent (dropped if malformed).
    #[arg(long, value_name = "TRACESTATE", requires = "traceparent")]
    pub tracestate: Option<String>,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Scope {
    Retained,
    Unfinished,
}

/// Priority labels of the design: low=0, medium=10, high=20, critical=30.
pub fn parse_priority(text: &str) -> Result<i32, String> {
    match sluice_store::priority::from_label(text) {
        Some(value) => Ok(value),
        None => text.parse().map_err(|_| {
            format!("`{text}` is not a priority; use low, medium, high, critical or an integer")
        }),
    }
}

pub async fn run(
    store: &Store,
    global: &Global,
    printer: &Printer,
    args: EnqueueArgs,
) -> anyhow::Result<()> {
    let template = NewJob {
        tenant: global.tenant.clone(),
        job_type: args.job_type.clone(),
        payload: Vec::new(),
        priority: args.priority,
        run_at: match (args.delay, args.run_at) {
            (Some(delay), _) => RunAt::Delay(delay),
            (None, Some(at)) => RunAt::At(at),
            (None, None) => RunAt::Now,
        },
        max_attempts: args.max_attempts,
        idempotency_key: args.idempotency_key.clone(),
        key_scope: match args.key_scope {
            Scope::Retained => KeyScope::Retained,
            Scope::Unfinished => KeyScope::Unfinished,
        },
        parent: None,
        concurrency_key: args.concurrency_key.clone(),
        id: None,
        trace: args
            .traceparent
            .as_deref()
            .map(|parent| TraceHeaders::new(parent, args.tracestate.as_deref()))
            .transpose()
            .map_err(|e| anyhow::anyhow!("--traceparent: {e}"))?,
    };
    if let Some(path) = &args.bulk {
        return enqueue_bulk(store, printer, template, path).await;
    }
    let payload = match (&args.payload, &args.payload_file) {
        (Some(text), _) => text.clone().into_bytes(),
        (None, Some(path)) => read_file(path)?,
        (None, None) => b"{}".to_vec(),
    };
    let job = NewJob {
        payload,
        ..template
    };
    let enqueued = store.enqueue(&job).await?;
    print_enqueued(printer, &enqueued);
    Ok(())
}

fn print_enqueued(printer: &Printer, enqueued: &Enqueued) {
    let state = if enqueued.created {
        "created"
    } else {
        "already existed (same idempotency key)"
    };
    printer.value(
        &BatchItem::from(*enqueued),
        &[
            ("job", enqueued.id.to_string()),
            ("status", state.to_string()),
        ],
    );
}

async fn enqueue_bulk(
    store: &Store,
    printer: &Printer,
    template: NewJob,
    path: &PathBuf,
) -> anyhow::Result<()> {
    let text = String::from_utf8(read_file(path)?)
        .with_context(|| format!("{} is not UTF-8 text", path.display()))?;
    let mut jobs = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        serde_json::from_str::<serde_json::Value>(line)
            .with_context(|| format!("{} line {}: not valid JSON", path.display(), number + 1))?;
        jobs.push(NewJob {
            payload: line.as_bytes().to_vec(),
            ..template.clone()
        });
    }
    // A bar on stderr (hidden with --json and when stderr is not a terminal).
    let bar = if printer.is_json() {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::with_draw_target(
            Some(jobs.len() as u64),
            indicatif::ProgressDrawTarget::stderr(),
        )
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("enqueue [{bar:30}] {pos}/{len} jobs [{elapsed}]")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let mut created = 0usize;
    for chunk in jobs.chunks(BULK_CHUNK) {
        created += store
            .enqueue_many(chunk)
            .await?
            .iter()
            .filter(|e| e.created)
            .count();
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    let summary = BulkEnqueued {
        enqueued: created,
        lines: jobs.len(),
    };
    printer.value(&summary, &[("enqueued", created.to_string())]);
    Ok(())
}
