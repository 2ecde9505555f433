//! The one shape every capability has: [`Capability`] (its grant, its per-attempt state,
//! how that state is made and how its imports are linked), [`Attempt`] (what a capability
//! may use of the attempt it serves) and [`StoreData`] (what it may assume of the store's
//! data, beyond the state it reaches through its getter).
//!
//! Must not name a capability, `HostState` or `Caps`: the capabilities sit above this
//! file and `mod.rs` above them.

use std::sync::Arc;
use std::time::Instant;

use sluice_egress::Connector;
use tokio_util::sync::CancellationToken;
use wasmtime::component::Linker;
use wasmtime_wasi::WasiView;
use wasmtime_wasi_http::WasiHttpView;

use crate::attempt_trace::AttemptTrace;
use crate::contract::Contract;
use crate::journal::Journal;
use crate::log_buffer::LogBuffer;
use crate::suspend::RunShared;

/// One capability: a `sluice:task` (or `wasi:*`) interface the host serves a guest.
pub(crate) trait Capability {
    /// What the host grants it per job type, resolved before the attempt (`()` for a
    /// capability every attempt has).
    type Grant;
    /// Its per-attempt state: made with the store, dropped with it.
    type State: Send + 'static;

    /// The state of one attempt under `grant` (`None`: not granted).
    fn state(grant: Option<Arc<Self::Grant>>, attempt: &Attempt<'_>) -> Self::State;

    /// Links its imports of every contract up to `max` into `linker`. `get` reaches its
    /// state from the store's data: every host call of the capability goes through it.
    fn add_to_linker<T: StoreData>(
        linker: &mut Linker<T>,
        max: Contract,
        get: fn(&mut T) -> &mut Self::State,
    ) -> wasmtime::Result<()>;
}

/// What a capability may use of the attempt it serves while making its state.
pub(crate) struct Attempt<'a> {
    /// The attempt's capped log, for the lines a capability writes there.
    pub logs: &'a LogBuffer,
    /// Cancelled when the job is.
    pub cancel: &'a CancellationToken,
    /// When the attempt's timeout expires (`None`: no timeout).
    pub deadline: Option<Instant>,
    /// The host's one vetted outbound connector (`None`: the attempt has no HTTP grant).
    pub connector: Option<&'a Connector>,
    /// The journal of a durable job (`None`: not durable).
    pub journal: Option<&'a Journal>,
    /// What the run's capabilities share: its suspension, the ids `enqueue` returned.
    pub run: &'a RunShared,
    /// The trace the attempt continues (`None`: no spans, nothing injected).
    pub trace: Option<&'a AttemptTrace>,
}

/// The data of an attempt's store as the capabilities see it: WASI's and wasi:http's
/// views (the resource table they share) and `Send`, for async host calls.
pub(crate) trait StoreData: WasiView + WasiHttpView + Send + 'static {}

impl<T: WasiView + WasiHttpView + Send + 'static> StoreData for T {}
