//! `bad-result` (hostile): hands back results an SDK-built task never would, to check that
//! the host records what really happened. It defines the canonical-ABI `run` export by
//! hand (core signature `(i64, i32 × 8) -> i32`, the return pointer) instead of using
//! `export_task!`, and its own `cabi_realloc`; the WIT type metadata comes from its own
//! `wit_bindgen::generate!` of the task world (without calling `export!`), so
//! `wasm-component-ld` wraps it as a normal task component.
//!
//! Payload `{"mode": M, "bytes": N}`; see `MODES` below and `sample-tasks/README.md`.
//! One case cannot be chosen by the payload, because it happens before `run` can read it:
//! `cabi_realloc` returns a pointer outside memory when asked for exactly
//! [`BAD_ALLOCATION_SIZE`] bytes, so a job whose payload has that length is never passed in.

use std::alloc::Layout;

use sluice_guest::serde_json::{self, Value};

mod bindings {
    // Generated code is not ours to lint.
    #![allow(clippy::all, dead_code)]
    wit_bindgen::generate!({ path: "../../wit", world: "task" });
}

use bindings::sluice::task::host::{Level, log};

/// Payload length for which `cabi_realloc` misbehaves (0xBAD).
pub const BAD_ALLOCATION_SIZE: usize = 2989;

/// A pointer far outside any memory the sandbox allows (just below 4 GiB).
const OUTSIDE: u32 = 0xFFFF_FFF0;

/// Every mode, for the error message on an unknown one.
const MODES: &str = "huge-fatal, huge-retry, bad-utf8-fatal, bad-utf8-retry, bad-result-tag, \
     bad-error-tag, oob-output, oob-message-fatal, oob-retptr, misaligned-retptr, huge-log, ok";

/// The 16-byte return area of `result<list<u8>, task-error>`: words 0..4, little-endian.
/// `ok`: `[0, ptr, len, _]`; `err`: `[1, case, ptr, len]` (case 0 = retry, 1 = fatal).
fn area(words: [u32; 4]) -> u32 {
    let area: &'static mut [u32; 4] = Box::leak(Box::new(words));
    area.as_ptr() as u32
}

/// Leaks `bytes` into linear memory: (pointer, length).
fn place(bytes: Vec<u8>) -> (u32, u32) {
    let bytes = bytes.leak();
    (bytes.as_ptr() as u32, bytes.len() as u32)
}

fn ok(bytes: Vec<u8>) -> u32 {
    let (ptr, len) = place(bytes);
    area([0, ptr, len, 0])
}

fn err(fatal: bool, message: Vec<u8>) -> u32 {
    let (ptr, len) = place(message);
    area([1, u32::from(fatal), ptr, len])
}

/// A message of exactly `bytes` bytes that starts with `prefix`.
fn huge(prefix: &str, bytes: usize) -> Vec<u8> {
    let mut message = prefix.as_bytes().to_vec();
    message.resize(bytes.max(prefix.len()), b'x');
    message
}

fn respond(payload: &[u8]) -> u32 {
    let args: Value = serde_json::from_slice(payload).unwrap_or(Value::Null);
    let mode = args["mode"].as_str().unwrap_or("");
    let bytes = |default: usize| args["bytes"].as_u64().map_or(default, |n| n as usize);
    match mode {
        "huge-fatal" => err(true, huge("payment declined: ", bytes(10_000_000))),
        "huge-retry" => err(false, huge("gateway busy: ", bytes(10_000_000))),
        "bad-utf8-fatal" => err(true, b"card \xff\xfe declined".to_vec()),
        "bad-utf8-retry" => err(false, b"gateway \xc3 busy".to_vec()),
        "bad-result-tag" => area([7, 0, 0, 0]),
        "bad-error-tag" => {
            let (ptr, len) = place(b"neither retry nor fatal".to_vec());
            area([1, 5, ptr, len])
        }
        "oob-output" => area([0, OUTSIDE, 64, 0]),
        "oob-message-fatal" => area([1, 1, OUTSIDE, 64]),
        "oob-retptr" => OUTSIDE,
        "misaligned-retptr" => ok(b"fine".to_vec()) + 1,
        "huge-log" => {
            let line = "z".repeat(bytes(3 << 20));
            log(Level::Info, &line);
            ok(b"logged".to_vec())
        }
        "ok" => ok(b"fine".to_vec()),
        other => err(
            true,
            format!("unknown mode {other:?}; expected one of: {MODES}").into_bytes(),
        ),
    }
}

/// The task world's `run`, lowered by hand: the `job` record's fields, flattened.
///
/// # Safety
/// Called only by the component's canonical-ABI adapter, with pointers it allocated
/// through `cabi_realloc`.
#[unsafe(export_name = "run")]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn run(
    _id: i64,
    _job_type: *const u8,
    _job_type_len: usize,
    _tenant: *const u8,
    _tenant_len: usize,
    _attempt: u32,
    _max_attempts: u32,
    payload: *const u8,
    payload_len: usize,
) -> u32 {
    // Keeps the bindings' object, which carries the `component-type` custom section
    // describing the task world, in the link.
    bindings::__link_custom_section_describing_imports();
    let payload = if payload_len == 0 {
        &[][..]
    } else {
        // SAFETY: the adapter passes a pointer and length it allocated and filled.
        unsafe { std::slice::from_raw_parts(payload, payload_len) }
    };
    respond(payload)
}

/// The allocator the host calls to pass the job in; misbehaves for one size (see the
/// module docs).
///
/// # Safety
/// Called by the canonical ABI with a previous allocation (or null), its size, an
/// alignment that is a power of two, and the new size.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cabi_realloc(
    old: *mut u8,
    old_len: usize,
    align: usize,
    new_len: usize,
) -> *mut u8 {
    if new_len == BAD_ALLOCATION_SIZE {
        return OUTSIDE as usize as *mut u8;
    }
    if new_len == 0 {
        return align as *mut u8;
    }
    let Ok(layout) = Layout::from_size_align(new_len, align) else {
        std::process::abort();
    };
    // SAFETY: a non-zero size; `old` was returned by this function for `old_len` bytes.
    let ptr = unsafe {
        if old_len == 0 {
            std::alloc::alloc(layout)
        } else {
            let old_layout = Layout::from_size_align_unchecked(old_len, align);
            std::alloc::realloc(old, old_layout, new_len)
        }
    };
    if ptr.is_null() {
        std::process::abort();
    }
    ptr
}
