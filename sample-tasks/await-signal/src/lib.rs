//! `await-signal` (contract 0.3): payload `{"name": "go", "timeout_ms": T}` (`name`
//! optional, default `go`; `timeout_ms` optional: wait forever). Awaits the signal with
//! `durable::await_signal` and completes with `{"signal": <its payload, JSON; null for
//! one sent without a payload>, "timed_out": false, "resumed_at_us": <the wall clock, in
//! microseconds since the epoch, read just after the await returned>}` (`timed_out`
//! true and `signal` null after the timeout). The resume benchmark (`sluice bench
//! resume`) measures from the signal's commit to `resumed_at_us` (a live clock read: it
//! comes after every journaled call).
//!
//! Meant for a durable type: not durable, the await is refused (`fatal`, naming it).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sluice_guest::serde_json::{Value, json};
use sluice_guest::v0_3::durable;
use sluice_guest::{Job, TaskResult};

#[derive(serde::Deserialize)]
#[serde(default)]
struct Args {
    name: String,
    timeout_ms: Option<u64>,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            name: "go".into(),
            timeout_ms: None,
        }
    }
}

fn run(job: Job) -> TaskResult {
    let args: Args = job.json_or_default()?;
    let timeout = args.timeout_ms.map(Duration::from_millis);
    let taken = durable::await_signal(&args.name, timeout)?;
    let resumed_at_us = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64);
    let signal = match &taken {
        Some(payload) => sluice_guest::serde_json::from_slice(payload).unwrap_or(Value::Null),
        None => Value::Null,
    };
    sluice_guest::json_output(&json!({
        "signal": signal,
        "timed_out": taken.is_none(),
        "resumed_at_us": resumed_at_us,
    }))
}

sluice_guest::export_task_v0_3!(run);
