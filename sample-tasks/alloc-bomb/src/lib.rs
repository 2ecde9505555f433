//! `alloc-bomb` (hostile): allocates 1 MiB blocks and writes to every page of each, forever.
//! Expected outcome: the host's memory limit (allocation failure aborts the guest).

use std::hint::black_box;

use sluice_guest::{Job, TaskResult};

const BLOCK: usize = 1 << 20;

fn run(_job: Job) -> TaskResult {
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut block = vec![0u8; BLOCK];
        for (i, byte) in block.iter_mut().step_by(4096).enumerate() {
            *byte = i as u8 | 1;
        }
        blocks.push(black_box(block));
        if blocks.len().is_multiple_of(64) {
            sluice_guest::log::info(format!("allocated {} MiB", blocks.len()));
        }
    }
}

sluice_guest::export_task!(run);
