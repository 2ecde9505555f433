//! Plain configuration values: [`SandboxConfig`] (one per host, fixed when the
//! [`Sandbox`](crate::Sandbox) is built) and [`Limits`] (per attempt).
//!
//! Owns defaults and the arithmetic that turns limits into wasmtime settings. Must not
//! touch wasmtime objects: the engine and stores read these values, never the reverse.

use std::path::PathBuf;
use std::time::Duration;

use sluice_egress::NetworkPolicy;

use crate::contract::Contract;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// Host-wide sandbox settings. Per-attempt [`Limits`] are clamped to the ceilings here.
#[derive(Clone, Debug)]
pub struct SandboxConfig {
    /// Attempts that may run at the same time. Sizes wasmtime's pooling allocator; further
    /// `run` calls wait for a free slot (the wait counts toward nothing).
    pub max_concurrency: u32,
    /// Worker threads of the dedicated runtime that executes guests, so a busy guest
    /// never starves the caller's runtime.
    pub guest_threads: usize,
    /// Epoch tick: the granularity of timeouts and of cancellation, and the slice after
    /// which a busy guest yields its guest thread to the next (a just-started one first).
    pub epoch_tick: Duration,
    /// Where precompiled components are kept across restarts. `None`: memory only.
    /// The directory must be writable by this host only: its files are loaded as machine code.
    pub cache_dir: Option<PathBuf>,
    /// Ceiling for any single linear memory (pool slot size); also caps `Limits::memory_bytes`.
    pub max_memory_bytes: u64,
    /// Ceiling for any single table (pool slot size); also caps `Limits::table_elements`.
    pub max_table_elements: u64,
    /// Wasm stack available to a guest before it traps with a stack overflow.
    pub max_wasm_stack: usize,
    /// The newest task contract this host runs (default: the newest it implements). A
    /// host limited to 0.1 refuses 0.2 components and links none of 0.2's imports: it
    /// stands for an older host in a rolling deploy.
    pub max_contract: Contract,
    /// Outbound HTTP (contract 0.2): what the host's one connector may reach beyond the
    /// job types' allow lists.
    pub egress: EgressConfig,
}

/// The host's egress settings (the allow lists are per job type, not here).
#[derive(Clone, Debug, Default)]
pub struct EgressConfig {
    /// Networks the operator opened despite the deny list (`--egress-allow-network`).
    pub networks: NetworkPolicy,
    /// Root CAs trusted beside the built-in web roots, PEM (`--egress-ca-file`).
    pub extra_root_certs_pem: Vec<u8>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        SandboxConfig {
            max_concurrency: 16,
            guest_threads: cpus,
            // 2 ms, not 10: with more busy guests than guest threads, a new attempt (a
            // light tenant's job beside a flood) waits for a slice to end before it runs.
            // Measured in docs/fairness.md (session 15); the drain's A/B (a few percent at
            // most, within the noise) is in docs/benchmarks.md.
            epoch_tick: Duration::from_millis(2),
            cache_dir: None,
            max_memory_bytes: 1024 * MIB,
            max_table_elements: 100_000,
            max_wasm_stack: 512 * KIB as usize,
            max_contract: Contract::NEWEST,
            egress: EgressConfig::default(),
        }
    }
}

/// Per-attempt limits (from the job type, capped by the tenant). Exceeding one fails the
/// attempt with a [`Failure`](crate::Failure) naming the limit and its figure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Fuel units (roughly one per wasm instruction). `0` means no fuel limit.
    pub fuel: u64,
    /// Wall-clock time for instantiation plus the call. `None` or zero: no timeout.
    pub timeout: Option<Duration>,
    /// Linear memory, summed over all memories of the instance.
    pub memory_bytes: u64,
    /// Elements of any single table.
    pub table_elements: u64,
    /// Largest output (`ok` bytes) accepted.
    pub output_bytes: u64,
    /// Log bytes kept (host `log` lines plus stdout/stderr); the rest is counted and dropped.
    pub log_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            fuel: 5_000_000_000,
            timeout: Some(Duration::from_secs(15 * 60)),
            memory_bytes: 128 * MIB,
            table_elements: 20_000,
            output_bytes: MIB,
            log_bytes: 64 * KIB,
        }
    }
}

impl Limits {
    /// The timeout in force: `None` when unset or zero.
    pub fn effective_timeout(&self) -> Option<Duration> {
        self.timeout.filter(|t| !t.is_zero())
    }

    /// Fuel to put in the store: the limit, or `u64::MAX` when there is none.
    pub(crate) fn store_fuel(&self) -> u64 {
        if self.fuel == 0 { u64::MAX } else { self.fuel }
    }

    /// These limits with memory and tables capped by the host's ceilings.
    pub(crate) fn clamped_to(&self, cfg: &SandboxConfig) -> Limits {
        Limits {
            memory_bytes: self.memory_bytes.min(cfg.max_memory_bytes),
            table_elements: self.table_elements.min(cfg.max_table_elements),
            ..self.clone()
        }
    }

    /// Most bytes one guest-to-host transfer may carry (wasmtime's "hostcall fuel",
    /// 128 MiB by default): the largest output or log the host would keep, plus 1 MiB for
    /// the envelope. wasmtime refuses a host-call argument larger than this before the host
    /// allocates it (a single `log` call that large is a trap); `guest_result.rs` applies
    /// the same cap to `run`'s `ok` bytes (never copied beyond it: `output too large`),
    /// while an error message of any size is read only as far as it is kept.
    pub(crate) fn hostcall_bytes(&self) -> usize {
        let keep = self.output_bytes.max(self.log_bytes);
        usize::try_from(keep.saturating_add(MIB)).unwrap_or(usize::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_timeout_means_none() {
        let l = Limits {
            timeout: Some(Duration::ZERO),
            ..Limits::default()
        };
        assert_eq!(l.effective_timeout(), None);
        assert_eq!(
            Limits::default().effective_timeout(),
            Some(Duration::from_secs(900))
        );
    }

    #[test]
    fn zero_fuel_means_unlimited() {
        let l = Limits {
            fuel: 0,
            ..Limits::default()
        };
        assert_eq!(l.store_fuel(), u64::MAX);
        assert_eq!(Limits::default().store_fuel(), 5_000_000_000);
    }

    #[test]
    fn clamps_to_host_ceilings() {
        let cfg = SandboxConfig {
            max_memory_bytes: 64 * MIB,
            max_table_elements: 1000,
            ..SandboxConfig::default()
        };
        let l = Limits::default().clamped_to(&cfg);
        assert_eq!(l.memory_bytes, 64 * MIB);
        assert_eq!(l.table_elements, 1000);
        assert_eq!(l.output_bytes, MIB);
    }
}
