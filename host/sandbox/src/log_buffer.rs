//! [`LogBuffer`]: one attempt's log. Host `log` lines and the guest's stdout/stderr all
//! land here; the first `cap` bytes are kept, the rest is counted and dropped. Appending
//! never fails and never blocks on anything but a short mutex.
//!
//! Owns the line format (`[INFO] message`, `[stdout] text`). Must not know about wasmtime.

use std::sync::{Arc, Mutex, MutexGuard};

/// Shared, capped, truncating log of one attempt.
#[derive(Clone, Debug)]
pub(crate) struct LogBuffer {
    inner: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct State {
    buf: Vec<u8>,
    cap: usize,
    dropped: u64,
}

/// What an attempt logged, after the cap.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct CapturedLogs {
    pub bytes: Vec<u8>,
    pub dropped: u64,
}

impl LogBuffer {
    pub(crate) fn new(cap: u64) -> Self {
        let cap = usize::try_from(cap).unwrap_or(usize::MAX);
        LogBuffer {
            inner: Arc::new(Mutex::new(State {
                buf: Vec::with_capacity(cap.min(4096)),
                cap,
                dropped: 0,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave the buffer inconsistent.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends one line: `[LEVEL] message\n`.
    pub(crate) fn line(&self, level: &str, message: &str) {
        let mut s = self.lock();
        for part in [b"[", level.as_bytes(), b"] ", message.as_bytes(), b"\n"] {
            s.push(part);
        }
    }

    /// Appends raw stream bytes, starting each line with `[prefix] `. `at_line_start`
    /// belongs to the stream and carries over between writes.
    pub(crate) fn stream(&self, prefix: &str, bytes: &[u8], at_line_start: &mut bool) {
        let mut s = self.lock();
        for chunk in bytes.split_inclusive(|b| *b == b'\n') {
            if *at_line_start {
                for part in [b"[", prefix.as_bytes(), b"] "] {
                    s.push(part);
                }
            }
            s.push(chunk);
            *at_line_start = chunk.ends_with(b"\n");
        }
    }

    /// What was logged so far.
    pub(crate) fn snapshot(&self) -> CapturedLogs {
        let s = self.lock();
        CapturedLogs {
            bytes: s.buf.clone(),
            dropped: s.dropped,
        }
    }
}

impl State {
    fn push(&mut self, bytes: &[u8]) {
        let room = self.cap - self.buf.len();
        let keep = bytes.len().min(room);
        self.buf.extend_from_slice(&bytes[..keep]);
        self.dropped += (bytes.len() - keep) as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_have_level_prefix() {
        let log = LogBuffer::new(1024);
        log.line("INFO", "hello");
        log.line("WARN", "careful");
        assert_eq!(log.snapshot().bytes, b"[INFO] hello\n[WARN] careful\n");
    }

    #[test]
    fn keeps_first_bytes_and_counts_the_rest() {
        let log = LogBuffer::new(10);
        log.line("INFO", "0123456789");
        let got = log.snapshot();
        assert_eq!(got.bytes, b"[INFO] 012");
        assert_eq!(got.dropped, 8);
        log.line("INFO", "more");
        assert_eq!(log.snapshot().dropped, 8 + 12);
    }

    #[test]
    fn stream_prefixes_each_line_across_writes() {
        let log = LogBuffer::new(1024);
        let mut start = true;
        log.stream("stdout", b"a\nb", &mut start);
        log.stream("stdout", b"c\n", &mut start);
        log.stream("stdout", b"d", &mut start);
        assert_eq!(log.snapshot().bytes, b"[stdout] a\n[stdout] bc\n[stdout] d");
    }
}
