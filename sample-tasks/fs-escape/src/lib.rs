//! `fs-escape` (hostile): tries to read `/etc/passwd`, list `/` and `.`, and write a file.
//! Completes with a JSON report, one key per attempt, each `"error: ..."` or `"ok: <data>"`;
//! any `ok:` means the sandbox leaked filesystem access (the data is included as evidence).

use sluice_guest::serde_json::json;
use sluice_guest::{Job, TaskResult};

fn report<T: std::fmt::Debug>(r: std::io::Result<T>) -> String {
    match r {
        Ok(data) => format!("ok: {data:?}"),
        Err(e) => format!("error: {e}"),
    }
}

fn list(dir: &str) -> std::io::Result<Vec<String>> {
    std::fs::read_dir(dir)?
        .map(|entry| Ok(entry?.file_name().to_string_lossy().into_owned()))
        .collect()
}

fn run(_job: Job) -> TaskResult {
    sluice_guest::json_output(&json!({
        "read": report(std::fs::read_to_string("/etc/passwd")),
        "list": report(list("/")),
        "list_cwd": report(list(".")),
        "write": report(std::fs::write("/tmp/sluice-fs-escape", b"escaped")),
    }))
}

sluice_guest::export_task!(run);
