//! `dirty-memory`: checks that its linear memory starts exactly as the component's image
//! on every attempt, then dirties it for the next one. A 2 MiB zeroed buffer (`.bss`;
//! more than the host restores in place, so both of its reset paths are crossed) must
//! read as zeroes and a 4 KiB table (`.data`) as its initial bytes. The output is `clean`,
//! or `dirty: …` naming the first byte an earlier attempt left behind.

use std::cell::UnsafeCell;

use sluice_guest::{Job, TaskResult};

const ZEROED_BYTES: usize = 2 << 20;
const TABLE_BYTE: u8 = 0xA5;

/// A static the guest may write: it is single-threaded, and only `run` touches these.
struct Scratch<T>(UnsafeCell<T>);
// SAFETY: a wasm32-wasip2 task runs on one thread; nothing shares these across threads.
unsafe impl<T> Sync for Scratch<T> {}

static ZEROED: Scratch<[u8; ZEROED_BYTES]> = Scratch(UnsafeCell::new([0; ZEROED_BYTES]));
static TABLE: Scratch<[u8; 4096]> = Scratch(UnsafeCell::new([TABLE_BYTE; 4096]));

fn run(_job: Job) -> TaskResult {
    // SAFETY: see `Scratch`; no other reference to either static exists during `run`.
    let (zeroed, table) = unsafe { (&mut *ZEROED.0.get(), &mut *TABLE.0.get()) };
    let verdict = if let Some(i) = zeroed.iter().position(|&b| b != 0) {
        format!("dirty: zeroed buffer byte {i} is {:#04x}", zeroed[i])
    } else if let Some(i) = table.iter().position(|&b| b != TABLE_BYTE) {
        format!("dirty: table byte {i} is {:#04x}", table[i])
    } else {
        "clean".to_string()
    };
    zeroed.fill(0x5A);
    table.fill(0);
    Ok(verdict.into_bytes())
}

sluice_guest::export_task!(run);
