//! `bearer-call`: payload `{"secret": "NAME", "url": "...", "fail": false}`; reads the
//! tenant's secret NAME and sends `GET url` with `Authorization: Bearer <value>`, the way
//! a task calls a third-party API with a stored key. It logs a line holding the value
//! (the host masks it as `[secret NAME]`), and completes with `{"status": S}`. With
//! `"fail": true` it returns a retryable error whose message holds the value (masked in
//! `last_error` too). A secret not granted or not set is `fatal`, naming why.

use sluice_guest::serde_json::json;
use sluice_guest::{Job, TaskError, TaskResult, http, log, secrets};

#[derive(serde::Deserialize)]
struct Args {
    secret: String,
    url: String,
    #[serde(default)]
    fail: bool,
}

fn run(job: Job) -> TaskResult {
    let args: Args = job.json()?;
    let value = secrets::get(&args.secret)?;
    log::info(format!("calling {} with token {value}", args.url));
    println!("stdout also sees {value}");
    let response = http::Request::get(&args.url)
        .header("authorization", format!("Bearer {value}"))
        .send()?;
    if args.fail {
        return Err(TaskError::retry(format!(
            "{} answered {} to token {value}",
            args.url, response.status
        )));
    }
    sluice_guest::json_output(&json!({ "status": response.status }))
}

sluice_guest::export_task!(run);
