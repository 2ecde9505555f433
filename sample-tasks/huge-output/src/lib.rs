//! `huge-output` (hostile): completes with N bytes of `x`, from payload `{"bytes": N}`;
//! 4 MiB when the payload or the field is missing. Expected outcome: output too large.

use sluice_guest::{Job, TaskResult};

#[derive(serde::Deserialize)]
#[serde(default)]
struct Args {
    bytes: usize,
}

impl Default for Args {
    fn default() -> Self {
        Args { bytes: 4 << 20 }
    }
}

fn run(job: Job) -> TaskResult {
    let args: Args = job.json_or_default()?;
    Ok(vec![b'x'; args.bytes])
}

sluice_guest::export_task!(run);
