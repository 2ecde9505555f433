//! The WASI context every attempt gets: nothing ambient. No preopened directories, no
//! environment variables, no arguments, an empty stdin, every socket address refused,
//! name lookup/TCP/UDP off. Clocks and randomness work (a durable job's through its
//! journal: `journal/clocks.rs`). stdout and stderr go into the
//! attempt's [`LogBuffer`] through [`CappedPipe`], which keeps the first bytes up to the
//! cap, counts the rest and never fails a write (a full log must not fail a job).
//!
//! Must not grant anything: a new capability is a product decision, made here, on purpose.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder};

use crate::journal::{Journal, clocks};
use crate::log_buffer::LogBuffer;

/// Largest `get-random-bytes` request served (wasmtime's default is 64 MiB).
const MAX_RANDOM_BYTES: u64 = 1 << 20;
/// Write permit handed to the guest; writes past the log cap are accepted and dropped.
const WRITE_PERMIT: usize = 64 * 1024;

/// Builds the denied-by-default WASI context for one attempt; a durable job's (`journal`
/// given) reads its clocks and random bytes through the journal.
pub(crate) fn denied_wasi_ctx(logs: &LogBuffer, journal: Option<&Journal>) -> WasiCtx {
    let mut b = WasiCtxBuilder::new();
    if let Some(journal) = journal {
        b.wall_clock(clocks::WallClock(journal.clone()))
            .monotonic_clock(clocks::MonotonicClock {
                journal: journal.clone(),
                start: std::time::Instant::now(),
            })
            .secure_random(clocks::Random(journal.clone()))
            .insecure_random(clocks::Random(journal.clone()))
            .insecure_random_seed(clocks::insecure_seed(journal.job_id()));
    }
    // Environment, arguments and preopened directories: the builder starts with none, and
    // none are added here.
    b.stdin(tokio::io::empty())
        .stdout(CappedPipe::new(logs.clone(), "stdout"))
        .stderr(CappedPipe::new(logs.clone(), "stderr"))
        .socket_addr_check(|_addr, _use| Box::pin(async { false }))
        .allow_ip_name_lookup(false)
        .allow_tcp(false)
        .allow_udp(false)
        .max_random_size(MAX_RANDOM_BYTES)
        .allow_blocking_current_thread(false);
    b.build()
}

/// A stdout/stderr sink writing into the attempt's log, one `[stdout] ` prefix per line.
#[derive(Clone)]
pub(crate) struct CappedPipe {
    logs: LogBuffer,
    prefix: &'static str,
    /// Shared by every stream handle the guest opens on this pipe.
    at_line_start: Arc<AtomicBool>,
}

impl CappedPipe {
    pub(crate) fn new(logs: LogBuffer, prefix: &'static str) -> Self {
        CappedPipe {
            logs,
            prefix,
            at_line_start: Arc::new(AtomicBool::new(true)),
        }
    }

    fn append(&self, bytes: &[u8]) {
        let mut start = self.at_line_start.load(Ordering::Relaxed);
        self.logs.stream(self.prefix, bytes, &mut start);
        self.at_line_start.store(start, Ordering::Relaxed);
    }
}

impl IsTerminal for CappedPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CappedPipe {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl OutputStream for CappedPipe {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.append(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(WRITE_PERMIT)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CappedPipe {
    async fn ready(&mut self) {}
}

impl AsyncWrite for CappedPipe {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.append(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipe_never_fails_and_truncates() {
        let logs = LogBuffer::new(16);
        let mut pipe = CappedPipe::new(logs.clone(), "stdout");
        for _ in 0..100 {
            assert_eq!(pipe.check_write().unwrap(), WRITE_PERMIT);
            pipe.write(Bytes::from_static(b"hello world\n")).unwrap();
        }
        let got = logs.snapshot();
        assert_eq!(got.bytes, b"[stdout] hello w");
        assert!(got.dropped > 0);
    }

    #[test]
    fn handles_share_line_state() {
        let logs = LogBuffer::new(1024);
        let pipe = CappedPipe::new(logs.clone(), "stderr");
        let mut a = pipe.p2_stream();
        let mut b = pipe.p2_stream();
        a.write(Bytes::from_static(b"x")).unwrap();
        b.write(Bytes::from_static(b"y\n")).unwrap();
        assert_eq!(logs.snapshot().bytes, b"[stderr] xy\n");
    }
}
