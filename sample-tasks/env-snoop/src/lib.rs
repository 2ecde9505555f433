//! `env-snoop` (hostile): completes with `{"vars": {..}, "args": [..]}` from the process
//! environment and arguments. The host grants none, so both must be empty.

use sluice_guest::serde_json::json;
use sluice_guest::{Job, TaskResult};

fn run(_job: Job) -> TaskResult {
    let vars: std::collections::BTreeMap<String, String> = std::env::vars().collect();
    let args: Vec<String> = std::env::args().collect();
    sluice_guest::json_output(&json!({ "vars": vars, "args": args }))
}

sluice_guest::export_task!(run);
