//! `log-flood` (hostile): writes N bytes of 1 KiB lines, from payload `{"bytes": N}`
//! (10 MiB when the payload or the field is missing), rotating between `println!`,
//! `eprintln!` and the host `log` import, then completes with `done`. The host must
//! truncate the log, never fail the attempt (a failed stdout write would panic here).

use sluice_guest::{Job, TaskResult};

#[derive(serde::Deserialize)]
#[serde(default)]
struct Args {
    bytes: usize,
}

impl Default for Args {
    fn default() -> Self {
        Args { bytes: 10 << 20 }
    }
}

fn run(job: Job) -> TaskResult {
    let args: Args = job.json_or_default()?;
    let line = "y".repeat(1023); // + newline = 1 KiB
    for i in 0..args.bytes.div_ceil(1024) {
        match i % 3 {
            0 => println!("{line}"),
            1 => eprintln!("{line}"),
            _ => sluice_guest::log::info(&line),
        }
    }
    Ok(b"done".to_vec())
}

sluice_guest::export_task!(run);
