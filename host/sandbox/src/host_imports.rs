//! The bindings of the task worlds, generated from `wit/task.wit` (`sluice:task@0.1.0`),
//! `wit/v0.2/` (`sluice:task@0.2.0`) and `wit/v0.3/` (`sluice:task@0.3.0`): the `Host` traits the capabilities implement
//! (`capabilities/`), their `add_to_linker` functions, and the `run` export's types.
//!
//! Generated code only: must not implement an import (a capability does) or name the
//! store's data. (wasmtime itself refuses a single transfer above the host-call cap,
//! `Limits::hostcall_bytes`, before any host function runs.) The `bindgen!` calls here
//! leave tracing off: a traced import would log what the guest passed, secrets included
//! (the binary's log filter drops this module's TRACE and DEBUG events as well,
//! `sluice::logging`).

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "task",
    exports: { default: async },
});

/// `sluice:task@0.2.0`. Only its imports are used (by the capabilities): its world's `run` export
/// has exactly 0.1's type, so one [`TaskPre`] checks and calls both.
pub(crate) mod v0_2 {
    wasmtime::component::bindgen!({
        path: "../../wit/v0.2",
        world: "task",
        require_store_data_send: true,
        // The host's check of a follow-up job may read the database (capabilities/jobs.rs).
        imports: { "sluice:task/jobs.enqueue": async | trappable },
        with: {
            "wasi:http": wasmtime_wasi_http::p2::bindings::http,
            "wasi:io": wasmtime_wasi::p2::bindings::io,
        },
    });
}

/// `sluice:task@0.3.0`: only its imports are used, like 0.2's. The calls that may read
/// the database or suspend the run are async and may end it (trappable).
pub(crate) mod v0_3 {
    wasmtime::component::bindgen!({
        path: "../../wit/v0.3",
        world: "task",
        require_store_data_send: true,
        imports: {
            "sluice:task/jobs.enqueue": async | trappable,
            "sluice:task/durable": async | trappable,
            "sluice:task/flow": async | trappable,
        },
        with: {
            "wasi:http": wasmtime_wasi_http::p2::bindings::http,
            "wasi:io": wasmtime_wasi::p2::bindings::io,
        },
    });
}
