//! `post-json`: payload `{"url": "...", "document": {...}}`; posts the document as JSON,
//! the way a task hands an invoice to a third-party API. A 2xx completes the job with
//! `{"status": S, "response": <the response body as JSON, or null>}`; a 5xx, a 429 or a
//! network failure is retried with backoff (the service may recover); any other 4xx, or a
//! destination the host refuses, is `fatal` (sending the same request again cannot help).

use sluice_guest::serde_json::{Value, json};
use sluice_guest::{Job, TaskError, TaskResult, http};

#[derive(serde::Deserialize)]
struct Args {
    url: String,
    document: Value,
}

/// Refusals by the host's policy: the same request will be refused again.
const PERMANENT: &[&str] = &[
    "HTTP-request-denied",
    "destination-IP-prohibited",
    "HTTP-request-URI-invalid",
    "invalid-request",
];

fn run(job: Job) -> TaskResult {
    let args: Args = job.json()?;
    let response = match http::post_json(&args.url, &args.document) {
        Ok(response) => response,
        Err(e) if PERMANENT.contains(&e.code.as_str()) => {
            return Err(TaskError::fatal(e.to_string()));
        }
        Err(e) => return Err(e.into()),
    };
    match response.status {
        200..=299 => sluice_guest::json_output(&json!({
            "status": response.status,
            "response": response.json::<Value>().ok(),
        })),
        429 | 500..=599 => Err(TaskError::retry(format!(
            "{} answered {}: {}",
            args.url,
            response.status,
            response.text()
        ))),
        status => Err(TaskError::fatal(format!(
            "{} refused the document with {status}: {}",
            args.url,
            response.text()
        ))),
    }
}

sluice_guest::export_task!(run);
