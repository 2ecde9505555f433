//! `counter`: increments a global counter and returns it as decimal text. Every attempt
//! gets a fresh instance, so the output must always be `1`; anything else means the host
//! reused an instance (state leaking between jobs).

use std::sync::atomic::{AtomicU64, Ordering};

use sluice_guest::{Job, TaskResult};

static RUNS: AtomicU64 = AtomicU64::new(0);

fn run(_job: Job) -> TaskResult {
    let n = RUNS.fetch_add(1, Ordering::SeqCst) + 1;
    Ok(n.to_string().into_bytes())
}

sluice_guest::export_task!(run);
