//! `http-get`: payload `{"url": "...", "timeout_ms": N?, "times": N?}`; fetches the URL
//! (`times` times, default once) through the host's egress policy and completes with the
//! last response's `{"status": S, "body_bytes": N, "body_head": "first 64 bytes",
//! "requests": N}`. A request the host refuses or that fails ends the job `dead` at
//! once, its message naming the `wasi:http` error code (a refusal will not change on a
//! retry).

use std::time::Duration;

use sluice_guest::serde_json::json;
use sluice_guest::{Job, TaskError, TaskResult, http};

#[derive(serde::Deserialize)]
struct Args {
    url: String,
    timeout_ms: Option<u64>,
    times: Option<u32>,
}

fn run(job: Job) -> TaskResult {
    let args: Args = job.json()?;
    let times = args.times.unwrap_or(1).max(1);
    let mut last = None;
    for _ in 0..times {
        let mut request = http::Request::get(&args.url);
        if let Some(ms) = args.timeout_ms {
            request = request.timeout(Duration::from_millis(ms));
        }
        last = Some(
            request
                .send()
                .map_err(|e| TaskError::fatal(e.to_string()))?,
        );
    }
    let response = last.expect("at least one request");
    let head = &response.body[..response.body.len().min(64)];
    sluice_guest::json_output(&json!({
        "status": response.status,
        "body_bytes": response.body.len(),
        "body_head": String::from_utf8_lossy(head),
        "requests": times,
    }))
}

sluice_guest::export_task!(run);
