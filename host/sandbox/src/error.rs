//! Errors callers branch on: [`ValidationError`] (why an upload is refused) and
//! [`SandboxError`] (why a component could not be prepared).
//!
//! Messages are written for the person who uploaded the component: each names what is
//! wrong and, where there is one, the fix. Must not carry wasmtime types (callers do not
//! depend on wasmtime); wasmtime's own explanation is kept as text in `detail` fields.

use crate::contract::Contract;
use crate::outcome::human_bytes;

/// Why a component is refused at upload (or when a host prepares it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    /// The upload is bigger than the configured maximum.
    #[error("component is {}; the limit is {}", human_bytes(*.size), human_bytes(*.limit))]
    TooLarge {
        /// Size of the upload in bytes.
        size: u64,
        /// The limit in bytes.
        limit: u64,
    },
    /// The bytes are not WebAssembly at all.
    #[error(
        "not a WebAssembly component: the file does not start with the `\\0asm` header \
         (upload the .wasm file your build produced)"
    )]
    NotWasm,
    /// A core module rather than a component.
    #[error(
        "this is a core wasm module, not a component: build for wasm32-wasip2 or run \
         `wasm-tools component new`"
    )]
    CoreModule,
    /// The binary is malformed or uses a feature the sandbox turns off.
    #[error("invalid component: {detail}")]
    Invalid {
        /// wasmtime's explanation.
        detail: String,
    },
    /// The component does not export `run`.
    #[error(
        "component does not export `run` from the sluice:task/task world (it exports: {}); \
         implement the world in wit/task.wit",
        list_or_nothing(.exports)
    )]
    MissingRun {
        /// What the component exports instead.
        exports: Vec<String>,
    },
    /// `run` is exported with a different signature.
    #[error(
        "component exports `run` with the wrong type: {problem}; the task world expects \
         `run: func(job: job) -> result<list<u8>, task-error>` (sluice:task@0.1.0)"
    )]
    RunSignature {
        /// What differs from the task world.
        problem: String,
    },
    /// The component imports something the host does not provide.
    #[error(
        "component imports `{name}`, which the host does not provide (tasks may import \
         sluice:task/host, from contract 0.2 wasi:http/outgoing-handler, sluice:task/secrets \
         and sluice:task/jobs, and WASI 0.2 clocks, random, cli, io, filesystem and sockets)"
    )]
    UnsupportedImport {
        /// The import's name.
        name: String,
    },
    /// The component needs a newer contract than this host runs (a host started with
    /// `--max-contract`, or an older build during a rolling deploy).
    #[error(
        "component needs task contract {needs} (it imports `{import}`), but this host runs \
         contracts up to {supported}"
    )]
    ContractUnsupported {
        /// The contract its imports need.
        needs: Contract,
        /// An import that needs it.
        import: String,
        /// The newest contract this host runs.
        supported: Contract,
    },
    /// The imports are provided by name but their types do not match the host's.
    #[error("component imports do not match what the host provides: {detail}")]
    ImportMismatch {
        /// wasmtime's explanation, naming the import.
        detail: String,
    },
    /// The component needs more memories, tables or initial memory than the sandbox allows.
    #[error("component needs more than the sandbox allows: {detail}")]
    ExceedsSandbox {
        /// What exceeds which ceiling.
        detail: String,
    },
}

/// Why [`Sandbox::prepare`](crate::Sandbox::prepare) failed.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The bytes do not hash to the sha256 they were stored under.
    #[error("component bytes hash to {actual}, not the expected sha256 {expected}")]
    HashMismatch {
        /// The sha256 the caller gave (hex).
        expected: String,
        /// The sha256 of the bytes (hex).
        actual: String,
    },
    /// The component does not satisfy the task world or the sandbox's limits.
    #[error(transparent)]
    Invalid(#[from] ValidationError),
}

fn list_or_nothing(items: &[String]) -> String {
    if items.is_empty() {
        "nothing".to_owned()
    } else {
        items.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_large_names_both_sizes() {
        let e = ValidationError::TooLarge {
            size: 60 << 20,
            limit: 50 << 20,
        };
        assert_eq!(e.to_string(), "component is 60 MiB; the limit is 50 MiB");
    }

    #[test]
    fn missing_run_lists_exports() {
        let e = ValidationError::MissingRun { exports: vec![] };
        assert!(e.to_string().contains("it exports: nothing"), "{e}");
        let e = ValidationError::MissingRun {
            exports: vec!["wasi:cli/run@0.2.0".into()],
        };
        assert!(e.to_string().contains("wasi:cli/run@0.2.0"), "{e}");
    }
}
