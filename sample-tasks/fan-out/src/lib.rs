//! `fan-out`: enqueues follow-up jobs, the way a newsletter task sends one e-mail job per
//! subscriber. Payload `{"type": "echo", "count": 3}` with optional fields:
//! - `"then": "ok" | "retry" | "fatal"`: how the attempt ends after enqueueing (default
//!   `ok`); `"retry_first": true` ends only the first attempt with `retry`;
//! - `"delay_ms"`, `"priority"`, `"max_attempts"`, `"key_prefix"` (each child's key is
//!   the prefix and its number): passed to every child;
//! - `"keep_going": true`: a refused `enqueue` does not fail the attempt; the output
//!   reports it instead;
//! - `"secret": "NAME"`: reads the tenant's secret NAME and hands its value to every
//!   child (`"token"`), which the host masks in what it keeps of the children;
//! - `"wait_ms": N`: busy-waits N ms after enqueueing, before the attempt ends;
//! - `"payload": {...}`: every child gets exactly this payload instead (e.g. an event
//!   request for the reserved type `sluice.event`, docs/webhooks.md).
//!
//! Child `i` gets the payload `{"n": i, "attempt": <this attempt>}` (plus `"token"`).
//! The output is `{"enqueued": k, "refused": null | "<the error>"}`.

use std::time::{Duration, Instant};

use sluice_guest::jobs::{self, Options};
use sluice_guest::serde_json::json;
use sluice_guest::{Job, TaskError, TaskResult};

#[derive(serde::Deserialize)]
struct Args {
    #[serde(rename = "type")]
    job_type: String,
    count: u32,
    #[serde(default)]
    then: Option<String>,
    #[serde(default)]
    retry_first: bool,
    #[serde(default)]
    delay_ms: Option<u64>,
    #[serde(default)]
    priority: Option<i16>,
    #[serde(default)]
    max_attempts: Option<u32>,
    #[serde(default)]
    key_prefix: Option<String>,
    #[serde(default)]
    keep_going: bool,
    #[serde(default)]
    secret: Option<String>,
    #[serde(default)]
    wait_ms: u64,
    #[serde(default)]
    payload: Option<sluice_guest::serde_json::Value>,
}

fn options(args: &Args, n: u32) -> Options {
    let mut options = Options::default();
    if let Some(ms) = args.delay_ms {
        options = options.delay_ms(ms);
    }
    if let Some(p) = args.priority {
        options = options.priority(p);
    }
    if let Some(a) = args.max_attempts {
        options = options.max_attempts(a);
    }
    if let Some(prefix) = &args.key_prefix {
        options = options.idempotency_key(format!("{prefix}{n}"));
    }
    options
}

fn run(job: Job) -> TaskResult {
    let args: Args = job.json()?;
    let token = args
        .secret
        .as_deref()
        .map(sluice_guest::secrets::get)
        .transpose()?;
    let mut enqueued = 0;
    let mut refused = None;
    for n in 0..args.count {
        let mut payload = json!({ "n": n, "attempt": job.attempt });
        if let Some(token) = &token {
            payload["token"] = json!(token);
        }
        if let Some(fixed) = &args.payload {
            payload = fixed.clone();
        }
        match jobs::enqueue_json(&args.job_type, &payload, options(&args, n)) {
            Ok(()) => enqueued += 1,
            Err(e) if args.keep_going => {
                refused = Some(e.to_string());
                break;
            }
            Err(e) => return Err(e.into()),
        }
    }
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(args.wait_ms) {
        std::hint::spin_loop();
    }
    match args.then.as_deref() {
        _ if args.retry_first && job.attempt == 1 => {
            return Err(TaskError::retry("first attempt: asked to retry"));
        }
        Some("retry") => return Err(TaskError::retry("asked to retry")),
        Some("fatal") => return Err(TaskError::fatal("asked to fail")),
        _ => {}
    }
    sluice_guest::json_output(&json!({ "enqueued": enqueued, "refused": refused }))
}

sluice_guest::export_task!(run);
