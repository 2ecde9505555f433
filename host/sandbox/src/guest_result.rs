//! The call boundary of `run`, read without trusting the guest: [`JobArg`] passes the job
//! in and marks any failure to do so ([`PassingJobIn`]: the guest's `cabi_realloc`
//! returned a bad pointer), and [`RunResult`] reads `result<list<u8>, task-error>` out of
//! the guest's linear memory.
//!
//! wasmtime's own lifting stops at the first problem with one untyped error and caps every
//! list and string at the host-call transfer limit, so a 10 MB `fatal` message, a message
//! that is not UTF-8, an invalid tag and an oversized output all looked alike. Here each is
//! a typed value: the `ok` bytes are copied only within the host-call cap (beyond it they
//! are reported as [`Output::OverCap`], never copied); an error message is decoded from its
//! first bytes whatever its length or encoding ([`GuestText`]); an invalid tag or an `ok`
//! list outside memory is an [`InvalidResult`]. Limits and wording are decided in `run.rs`.
//!
//! Safety: `ComponentType`, `Lift` and `Lower` are wasmtime's unsafe, doc-hidden traits
//! (what `#[derive(ComponentType)]` implements). Every layout fact — flat representation,
//! size, alignment, the type check against the component — is delegated to the types
//! `bindgen!` generates from the same WIT; the code here only reads bytes through
//! bounds-checked slices. Must not decide outcomes or grant the guest anything.

use std::fmt;
use std::mem::MaybeUninit;

use wasmtime::component::__internal::wasmtime_environ::component::StringEncoding;
use wasmtime::component::__internal::{
    CanonicalAbiInfo, InstanceType, InterfaceType, LiftContext, LowerContext,
};
use wasmtime::component::{ComponentType, Lift, Lower};

use crate::guest_text::GuestText;
use crate::host_imports::{Job, TaskError};
use crate::outcome::human_bytes;

/// `run`'s result type as `bindgen!` maps it: the authority on its layout and type.
type Shape = Result<Vec<u8>, TaskError>;

// The canonical ABI layout read below: a `u8` tag at 0, the payload at 4 (`ok`: list
// pointer and length at 4 and 8; `err`: task-error's `u8` tag at 4, the string's pointer
// and length at 8 and 12). Checked against wasmtime's own layout at compile time.
const _: () = assert!(<Shape as ComponentType>::SIZE32 == 16);
const _: () = assert!(<Shape as ComponentType>::ALIGN32 == 4);
const _: () = assert!(<TaskError as ComponentType>::SIZE32 == 12);

/// The bit of a `latin1+utf16` string's length that says "UTF-16" (canonical ABI).
const UTF16_TAG: u32 = 1 << 31;

/// What `run` returned, read from the guest's memory.
pub(crate) enum RunResult {
    /// `ok(bytes)`.
    Ok(Output),
    /// `err(retry(msg))` (`fatal: false`) or `err(fatal(msg))`.
    Err { fatal: bool, message: GuestText },
    /// Bytes that are not a `result<list<u8>, task-error>`.
    Invalid(InvalidResult),
}

/// The `ok` bytes.
pub(crate) enum Output {
    /// Copied: within the host-call cap (`Limits::hostcall_bytes`), which is above the
    /// output limit; `run.rs` compares them with the output limit.
    Copied(Vec<u8>),
    /// Longer than the host-call cap: left in the guest's memory.
    OverCap,
}

/// How a result is malformed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum InvalidResult {
    /// The `result` tag is neither 0 (`ok`) nor 1 (`err`).
    ResultTag(u8),
    /// The `task-error` tag is neither 0 (`retry`) nor 1 (`fatal`).
    ErrorTag(u8),
    /// The `ok` list's pointer and length leave linear memory.
    OutputOutOfBounds(Span),
}

impl fmt::Display for InvalidResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidResult::ResultTag(tag) => {
                write!(f, "result tag {tag} (expected 0 = ok or 1 = err)")
            }
            InvalidResult::ErrorTag(tag) => {
                write!(f, "task-error tag {tag} (expected 0 = retry or 1 = fatal)")
            }
            InvalidResult::OutputOutOfBounds(span) => write!(f, "output list {span}"),
        }
    }
}

/// A pointer and byte length in the guest's memory that do not fit in it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Span {
    ptr: u32,
    bytes: u64,
    memory: usize,
    align: u32,
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Span {
            ptr,
            bytes,
            memory,
            align,
        } = self;
        if !ptr.is_multiple_of(*align) {
            write!(f, "at {ptr:#x} is not aligned to {align} bytes")
        } else {
            let memory = human_bytes(*memory as u64);
            write!(
                f,
                "at {ptr:#x} of {bytes} bytes is outside linear memory ({memory})"
            )
        }
    }
}

/// `bytes` bytes at `ptr`, if they lie inside `memory` and `ptr` is aligned.
fn slice(memory: &[u8], ptr: u32, bytes: u64, align: u32) -> Result<&[u8], Span> {
    let span = Span {
        ptr,
        bytes,
        memory: memory.len(),
        align,
    };
    if !ptr.is_multiple_of(align) {
        return Err(span);
    }
    let start = ptr as usize;
    usize::try_from(bytes)
        .ok()
        .and_then(|len| start.checked_add(len))
        .and_then(|end| memory.get(start..end))
        .ok_or(span)
}

/// The little-endian `u32` at `at` in the return area (0 if the area is short, which
/// wasmtime rules out: it hands over exactly `SIZE32` bytes).
fn word(area: &[u8], at: usize) -> u32 {
    let mut w = [0; 4];
    if let Some(bytes) = area.get(at..at + 4) {
        w.copy_from_slice(bytes);
    }
    u32::from_le_bytes(w)
}

fn read(cx: &mut LiftContext<'_>, area: &[u8]) -> RunResult {
    let memory = cx.memory();
    match area.first().copied().unwrap_or_default() {
        0 => {
            let (ptr, len) = (word(area, 4), word(area, 8));
            let bytes = match slice(memory, ptr, len.into(), 1) {
                Ok(bytes) => bytes,
                Err(span) => return RunResult::Invalid(InvalidResult::OutputOutOfBounds(span)),
            };
            // The host-call cap bounds what the host copies on the guest's behalf.
            if cx.consume_fuel(bytes.len()).is_err() {
                return RunResult::Ok(Output::OverCap);
            }
            RunResult::Ok(Output::Copied(bytes.to_vec()))
        }
        1 => {
            let fatal = match area.get(4).copied().unwrap_or_default() {
                0 => false,
                1 => true,
                tag => return RunResult::Invalid(InvalidResult::ErrorTag(tag)),
            };
            let encoding = cx.options().string_encoding;
            let message = read_text(memory, encoding, word(area, 8), word(area, 12));
            RunResult::Err { fatal, message }
        }
        tag => RunResult::Invalid(InvalidResult::ResultTag(tag)),
    }
}

/// Decodes the string at `ptr` (`len` in the encoding's code units) without copying more
/// than is kept.
fn read_text(memory: &[u8], encoding: StringEncoding, ptr: u32, len: u32) -> GuestText {
    let len = u64::from(len);
    let text = match encoding {
        StringEncoding::Utf8 => slice(memory, ptr, len, 1).map(GuestText::from_utf8),
        StringEncoding::Utf16 => slice(memory, ptr, len * 2, 2).map(GuestText::from_utf16),
        StringEncoding::CompactUtf16 if len & u64::from(UTF16_TAG) != 0 => {
            let units = len ^ u64::from(UTF16_TAG);
            slice(memory, ptr, units * 2, 2).map(GuestText::from_utf16)
        }
        StringEncoding::CompactUtf16 => slice(memory, ptr, len, 2).map(GuestText::from_latin1),
    };
    text.unwrap_or_else(|span| GuestText::Unreadable(format!("string {span}")))
}

// SAFETY: layout and type check are `Shape`'s (see the module docs).
#[allow(unsafe_code)] // wasmtime's traits for canonical-ABI types are unsafe
unsafe impl ComponentType for RunResult {
    type Lower = <Shape as ComponentType>::Lower;
    const ABI: CanonicalAbiInfo = <Shape as ComponentType>::ABI;

    fn typecheck(ty: &InterfaceType, types: &InstanceType<'_>) -> wasmtime::Result<()> {
        <Shape as ComponentType>::typecheck(ty, types)
    }
}

// SAFETY: reads only through bounds-checked slices of the area and memory wasmtime hands
// over; never fails, so every problem stays a typed value.
#[allow(unsafe_code)] // wasmtime's traits for canonical-ABI types are unsafe
unsafe impl Lift for RunResult {
    fn linear_lift_from_flat(
        _cx: &mut LiftContext<'_>,
        _ty: InterfaceType,
        _src: &Self::Lower,
    ) -> wasmtime::Result<Self> {
        // A result that flattens to more than one core value (this one: four) is always
        // returned through memory (the canonical ABI's MAX_FLAT_RESULTS is 1).
        wasmtime::bail!("`run`'s result was expected in memory, not in core values")
    }

    fn linear_lift_from_memory(
        cx: &mut LiftContext<'_>,
        _ty: InterfaceType,
        bytes: &[u8],
    ) -> wasmtime::Result<Self> {
        Ok(read(cx, bytes))
    }
}

/// The job, passed to `run` as the task world's `job` record.
pub(crate) struct JobArg<'a>(pub(crate) &'a Job);

/// Context on an error raised while passing the job in. The only guest code that runs
/// then is its `cabi_realloc`, allocating room for the job's strings and payload; wasmtime
/// refuses a pointer it returns outside memory (or misaligned).
#[derive(Debug)]
pub(crate) struct PassingJobIn;

impl fmt::Display for PassingJobIn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("while passing the job in")
    }
}

// SAFETY: layout and type check are `Job`'s, and lowering is `Job`'s own.
#[allow(unsafe_code)] // wasmtime's traits for canonical-ABI types are unsafe
unsafe impl ComponentType for JobArg<'_> {
    type Lower = <Job as ComponentType>::Lower;
    const ABI: CanonicalAbiInfo = <Job as ComponentType>::ABI;

    fn typecheck(ty: &InterfaceType, types: &InstanceType<'_>) -> wasmtime::Result<()> {
        <Job as ComponentType>::typecheck(ty, types)
    }
}

// SAFETY: delegates to `Job`'s lowering; only adds context to its error.
#[allow(unsafe_code)] // wasmtime's traits for canonical-ABI types are unsafe
unsafe impl Lower for JobArg<'_> {
    fn linear_lower_to_flat<T>(
        &self,
        cx: &mut LowerContext<'_, T>,
        ty: InterfaceType,
        dst: &mut MaybeUninit<Self::Lower>,
    ) -> wasmtime::Result<()> {
        self.0
            .linear_lower_to_flat(cx, ty, dst)
            .map_err(|e| e.context(PassingJobIn))
    }

    fn linear_lower_to_memory<T>(
        &self,
        cx: &mut LowerContext<'_, T>,
        ty: InterfaceType,
        offset: usize,
    ) -> wasmtime::Result<()> {
        self.0
            .linear_lower_to_memory(cx, ty, offset)
            .map_err(|e| e.context(PassingJobIn))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_outside_memory_are_refused_and_named() {
        let memory = [0u8; 100];
        assert_eq!(slice(&memory, 90, 10, 1).unwrap().len(), 10);
        let err = slice(&memory, 90, 11, 1).unwrap_err();
        assert_eq!(
            err.to_string(),
            "at 0x5a of 11 bytes is outside linear memory (100 bytes)"
        );
        assert!(slice(&memory, u32::MAX, 2, 1).is_err());
        let err = slice(&memory, 3, 2, 2).unwrap_err();
        assert_eq!(err.to_string(), "at 0x3 is not aligned to 2 bytes");
    }

    #[test]
    fn strings_are_read_in_the_guests_encoding() {
        let mut memory = vec![0u8; 64];
        memory[8..12].copy_from_slice(b"caf\xe9");
        let latin1 = read_text(&memory, StringEncoding::CompactUtf16, 8, 4);
        assert_eq!(latin1.to_string(), "café");
        let utf8 = read_text(&memory, StringEncoding::Utf8, 8, 4);
        assert!(utf8.to_string().starts_with("caf\u{FFFD} [not valid UTF-8"));
        let outside = read_text(&memory, StringEncoding::Utf8, 60, 5);
        assert_eq!(
            outside.to_string(),
            "[unreadable: string at 0x3c of 5 bytes is outside linear memory (64 bytes)]"
        );
        memory[16..20].copy_from_slice(&[b'h', 0, b'i', 0]);
        let utf16 = read_text(&memory, StringEncoding::CompactUtf16, 16, 2 | UTF16_TAG);
        assert_eq!(utf16.to_string(), "hi");
    }
}
