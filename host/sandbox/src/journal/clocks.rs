//! The clocks and random generators of a durable attempt's WASI context: each read is a
//! journal call (replayed, or made on the host's own clock or generator and recorded).
//! The monotonic clock stays monotonic across the switch from replayed to live reads
//! (live reads are offset so they never go below the last replayed one: the recorded
//! values may come from another host). Resolutions are not journaled (constant per host).
//! `wasi:random/insecure-seed` is derived from the job id (the same in every run).
//!
//! Must not block or call the sink (a read only buffers).

use std::convert::Infallible;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use wasmtime_wasi::{HostMonotonicClock, HostWallClock};

use super::Journal;

/// `wasi:clocks/wall-clock` through the journal.
pub(crate) struct WallClock(pub Journal);

impl HostWallClock for WallClock {
    fn resolution(&self) -> Duration {
        Duration::from_nanos(1)
    }

    fn now(&self) -> Duration {
        let bytes = self.0.call("wall-clock", "now", || {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default();
            let nanos = now.as_nanos().min(u128::from(u64::MAX)) as u64;
            (
                nanos.to_be_bytes().to_vec(),
                format!("{nanos} ns since the epoch"),
            )
        });
        Duration::from_nanos(u64_of(&bytes))
    }
}

/// `wasi:clocks/monotonic-clock` through the journal.
pub(crate) struct MonotonicClock {
    pub journal: Journal,
    /// The host's clock, whose zero is this attempt's start.
    pub start: std::time::Instant,
}

impl HostMonotonicClock for MonotonicClock {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        let bytes = self.journal.call("monotonic-clock", "now", || {
            let real = self.start.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64;
            let value = self.journal.with_state(|m| {
                let offset = *m.offset.get_or_insert(m.last.saturating_sub(real));
                real.saturating_add(offset).max(*m.last)
            });
            (value.to_be_bytes().to_vec(), format!("{value} ns"))
        });
        let value = u64_of(&bytes);
        self.journal.with_state(|m| *m.last = (*m.last).max(value));
        value
    }
}

/// `wasi:random/random` and `wasi:random/insecure` through the journal.
pub(crate) struct Random(pub Journal);

impl rand_core::TryRng for Random {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        let mut bytes = [0u8; 4];
        self.try_fill_bytes(&mut bytes)?;
        Ok(u32::from_be_bytes(bytes))
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        let mut bytes = [0u8; 8];
        self.try_fill_bytes(&mut bytes)?;
        Ok(u64::from_be_bytes(bytes))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        let request = format!("{} bytes", dst.len());
        let bytes = self.0.call("random", &request, || {
            let mut fresh = vec![0u8; dst.len()];
            rand::fill(&mut fresh[..]);
            (fresh, request.clone())
        });
        let n = bytes.len().min(dst.len());
        dst[..n].copy_from_slice(&bytes[..n]);
        Ok(())
    }
}

/// The `insecure-seed` of a durable job: fixed by its id.
pub(crate) fn insecure_seed(job_id: u64) -> u128 {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("sluice insecure seed {job_id}").as_bytes());
    let mut sixteen = [0u8; 16];
    sixteen.copy_from_slice(&digest[..16]);
    u128::from_be_bytes(sixteen)
}

fn u64_of(bytes: &[u8]) -> u64 {
    let mut eight = [0u8; 8];
    let n = bytes.len().min(8);
    eight[..n].copy_from_slice(&bytes[..n]);
    u64::from_be_bytes(eight)
}
