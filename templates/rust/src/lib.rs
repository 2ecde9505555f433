//! The `{{name}}` task: one attempt of one job in, the job's output out.

use sluice_guest::serde_json::{Map, Value, json};
use sluice_guest::{Job, TaskError, TaskResult};

fn run(job: Job) -> TaskResult {
    // A malformed payload is Fatal: the job goes to `dead` at once.
    let args: Map<String, Value> = job.json()?;
    sluice_guest::log::info(format!(
        "{{name}}: attempt {} of {}",
        job.attempt, job.max_attempts
    ));
    if args.get("fail").and_then(Value::as_str) == Some("retry") {
        return Err(TaskError::retry("asked to fail (retryable)"));
    }
    sluice_guest::json_output(&json!({ "task": "{{name}}", "received": args }))
}

sluice_guest::export_task!(run);
