//! `sluice-guest`: write a Sluice background-job task in a few lines of
//! Rust and compile it to a WebAssembly component (`wasm32-wasip2`).
//!
//! A task is one function from a [`Job`] to a [`TaskResult`]: `Ok(bytes)` completes the job
//! (the bytes become its output), `Err(TaskError::Retry(..))` asks for another attempt with
//! backoff, `Err(TaskError::Fatal(..))` sends the job to `dead` at once. A trap or panic also
//! fails the attempt (retryably). [`export_task!`] turns the function into the component's
//! `run` export, as defined by the `sluice:task/task` world in the repository's `wit/` folder.
//!
//! ```no_run
//! use sluice_guest::serde_json::json;
//! use sluice_guest::{Job, TaskError, TaskResult};
//!
//! #[derive(serde::Deserialize)]
//! struct Args {
//!     name: String,
//! }
//!
//! fn run(job: Job) -> TaskResult {
//!     let args: Args = job.json()?; // malformed payload -> TaskError::Fatal
//!     if args.name.is_empty() {
//!         return Err(TaskError::fatal("name must not be empty"));
//!     }
//!     sluice_guest::log::info(format!("hello {} (attempt {})", args.name, job.attempt));
//!     sluice_guest::json_output(&json!({ "greeted": args.name }))
//! }
//!
//! sluice_guest::export_task!(run);
//! ```
//!
//! Build it with `cargo build --release --target wasm32-wasip2` from a `cdylib` crate; see the
//! crate's `README.md` for a project from scratch.
//!
//! Inside the sandbox a task can log ([`log`]), poll for cancellation ([`cancelled`]), read
//! the clocks and get randomness, send HTTP requests ([`http`]) to the destinations its
//! job type is granted, read the tenant's secrets it is granted ([`secrets`]), and enqueue
//! follow-up jobs that exist only if the attempt completes ([`jobs`]) (all contract
//! `sluice:task@0.2.0`). The filesystem, environment,
//! arguments and sockets exist only as empty stubs; `println!`/`eprintln!` go to the
//! attempt's log, truncated at a cap.
//!
//! **Contract 0.3** (`sluice:task@0.3.0`: durable sleeps and waits, snooze, enqueue
//! returning the child's id) is the module [`v0_3`], with its own export macro
//! [`export_task_v0_3!`]. A component's contract is decided by the `sluice:task`
//! interfaces it imports, and it imports only those it calls: a task written with the
//! items above stays a 0.2 (or 0.1) component, one written with [`v0_3`] is a 0.3 one.

#[macro_use]
mod macros;

mod error;
pub mod http;
mod job;
pub mod jobs;
pub mod log;
mod retry_after;
pub mod secrets;
pub mod v0_3;

#[doc(hidden)]
pub mod bindings;

pub use error::{ResultExt, TaskError, TaskResult};
pub use job::Job;

/// Re-exported so tasks can build JSON values without naming another dependency.
pub use serde_json;

/// Serialize `value` as JSON and return it as the job's output.
///
/// A value that cannot be serialized (for example a map with non-string keys) is a bug in
/// the task, so it becomes [`TaskError::Fatal`].
pub fn json_output<T: serde::Serialize + ?Sized>(value: &T) -> TaskResult {
    serde_json::to_vec(value)
        .map_err(|e| TaskError::fatal(format!("cannot serialize output as JSON: {e}")))
}

/// True once an operator has cancelled this job or the host is shutting down.
///
/// Long-running tasks may poll it between units of work to stop cleanly (for example by
/// returning [`TaskError::retry`]); the host interrupts them anyway shortly after.
pub fn cancelled() -> bool {
    bindings::sluice::task::host::cancelled()
}

world_conversions!(bindings);

/// Export a task function `fn(Job) -> TaskResult` as this component's `run`
/// (contract 0.2; see [`export_task_v0_3!`] for 0.3).
///
/// Use it once, at the top level of a `cdylib` crate:
///
/// ```no_run
/// fn run(job: sluice_guest::Job) -> sluice_guest::TaskResult {
///     Ok(job.payload)
/// }
/// sluice_guest::export_task!(run);
/// ```
#[macro_export]
macro_rules! export_task {
    ($run:path) => {
        $crate::__export_task!([bindings] __sluice_export_world, $run);
    };
}

/// Glue called by the export macros: converts a contract's WIT types to the SDK's and back.
#[doc(hidden)]
pub fn __run<J: Into<Job>, E: From<TaskError>>(
    job: J,
    run: impl FnOnce(Job) -> TaskResult,
) -> Result<Vec<u8>, E> {
    run(job.into()).map_err(E::from)
}
