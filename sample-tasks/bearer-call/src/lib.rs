//! `bearer-call`: payload `{"secret": "NAME", "url": "...", "fail": false, "query": null}`;
//! reads the tenant's secret NAME and sends `GET url` with `Authorization: Bearer <value>`,
//! the way a task calls a third-party API with a stored key. With `"query": "api_key"` the
//! value also goes in the URL's query (`url?api_key=<value>`, or `&api_key=` when `url`
//! has a query), the way some APIs take their key. It logs a line holding the value
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
    #[serde(default)]
    query: Option<String>,
}

fn run(job: Job) -> TaskResult {
    let args: Args = job.json()?;
    let value = secrets::get(&args.secret)?;
    log::info(format!("calling {} with token {value}", args.url));
    println!("stdout also sees {value}");
    let url = match &args.query {
        Some(name) => {
            let sep = if args.url.contains('?') { '&' } else { '?' };
            format!("{}{sep}{name}={value}", args.url)
        }
        None => args.url.clone(),
    };
    let response = http::Request::get(&url)
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
