//! `stack-overflow` (hostile): unbounded recursion with work after each call, so it cannot
//! become a loop. By default (`{}` or no payload) each frame uses almost no linear memory,
//! so the engine's wasm call stack runs out: trap `call stack exhausted`. Payload
//! `{"stack": "shadow"}` keeps a 512-byte buffer per frame instead, exhausting Rust's 1 MiB
//! shadow stack in linear memory: trap `out of bounds memory access`.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use sluice_guest::{Job, TaskResult};

#[derive(serde::Deserialize, Default)]
struct Args {
    #[serde(default)]
    stack: String,
}

fn shadow(depth: u64) -> u64 {
    let frame = [depth; 64];
    black_box(&frame);
    if black_box(depth) == u64::MAX {
        return 0;
    }
    shadow(depth + 1).wrapping_add(frame[black_box(1)])
}

static DEPTH: AtomicU64 = AtomicU64::new(0);

fn native(depth: u64) -> u64 {
    if DEPTH.fetch_add(1, Ordering::Relaxed) == u64::MAX {
        return 0;
    }
    native(depth + 1).rotate_left(1) ^ depth
}

fn run(job: Job) -> TaskResult {
    let args: Args = job.json_or_default()?;
    let n = if args.stack == "shadow" {
        shadow(0)
    } else {
        native(0)
    };
    Ok(n.to_string().into_bytes())
}

sluice_guest::export_task!(run);
