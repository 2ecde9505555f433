//! `spin-forever` (hostile): loops forever without calling the host. Only fuel or the
//! epoch deadline can stop it; expected outcome: timeout or fuel exhausted.

use std::hint::black_box;

use sluice_guest::{Job, TaskResult};

fn run(_job: Job) -> TaskResult {
    let mut n: u64 = 0;
    loop {
        n = black_box(n).wrapping_add(1);
    }
}

sluice_guest::export_task!(run);
