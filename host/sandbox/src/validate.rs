//! Checks that a component can run as a task, each failure with its own
//! [`ValidationError`]: size, wasm header, core module vs component, compilation, the
//! sandbox's per-component ceilings, the `run` export's type, and imports (by name first,
//! so the message names the culprit, then `Linker::instantiate_pre` and `TaskPre::new` as
//! the authorities).
//!
//! Must not cache or run anything.

use wasmtime::Engine;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, Linker};

use crate::engine::COMPONENT_CAPS;
use crate::error::ValidationError;
use crate::host_imports::TaskPre;
use crate::run_signature::{check_run_type, item_kind};
use crate::store::HostState;

/// WASI 0.2 interfaces the linker provides (wasmtime-wasi's `wasi:cli/imports` minus
/// unstable ones). All but clocks and random are denied-by-default stubs.
const WASI_INTERFACES: &[&str] = &[
    "wasi:cli/environment",
    "wasi:cli/exit",
    "wasi:cli/stdin",
    "wasi:cli/stdout",
    "wasi:cli/stderr",
    "wasi:cli/terminal-input",
    "wasi:cli/terminal-output",
    "wasi:cli/terminal-stdin",
    "wasi:cli/terminal-stdout",
    "wasi:cli/terminal-stderr",
    "wasi:clocks/monotonic-clock",
    "wasi:clocks/wall-clock",
    "wasi:filesystem/types",
    "wasi:filesystem/preopens",
    "wasi:io/error",
    "wasi:io/poll",
    "wasi:io/streams",
    "wasi:random/random",
    "wasi:random/insecure",
    "wasi:random/insecure-seed",
    "wasi:sockets/network",
    "wasi:sockets/instance-network",
    "wasi:sockets/udp",
    "wasi:sockets/udp-create-socket",
    "wasi:sockets/tcp",
    "wasi:sockets/tcp-create-socket",
    "wasi:sockets/ip-name-lookup",
];
const HOST_INTERFACE: &str = "sluice:task/host";

/// Size, header, and core-module checks: cheap, before anything is compiled.
pub(crate) fn check_header(bytes: &[u8], max_bytes: usize) -> Result<(), ValidationError> {
    if bytes.len() > max_bytes {
        return Err(ValidationError::TooLarge {
            size: bytes.len() as u64,
            limit: max_bytes as u64,
        });
    }
    if wasmparser::Parser::is_component(bytes) {
        return Ok(());
    }
    if wasmparser::Parser::is_core_wasm(bytes) {
        return Err(ValidationError::CoreModule);
    }
    if bytes.starts_with(b"\0asm") {
        return Err(ValidationError::Invalid {
            detail: "unsupported WebAssembly binary version (expected a component, \
                     version 0x0d layer 1)"
                .into(),
        });
    }
    Err(ValidationError::NotWasm)
}

/// Compiles (parses and validates on the way). Slow: Cranelift runs here.
pub(crate) fn compile(engine: &Engine, bytes: &[u8]) -> Result<Component, ValidationError> {
    Component::new(engine, bytes).map_err(|e| ValidationError::Invalid {
        detail: format!("{e:#}"),
    })
}

/// Names a component imports and exports (for `ComponentInfo`).
pub(crate) struct Surface {
    pub imports: Vec<String>,
    pub exports: Vec<String>,
}

/// Everything after compilation: ceilings, the `run` export, imports; returns the
/// pre-instantiated task.
pub(crate) fn check_component(
    engine: &Engine,
    linker: &Linker<HostState>,
    component: &Component,
    max_memory_bytes: u64,
) -> Result<(TaskPre<HostState>, Surface), ValidationError> {
    check_resources(component, max_memory_bytes)?;
    let ty = component.component_type();
    let exports: Vec<String> = ty
        .exports(engine)
        .map(|(name, _)| name.to_owned())
        .collect();
    let imports: Vec<String> = ty
        .imports(engine)
        .map(|(name, _)| name.to_owned())
        .collect();

    match ty.get_export(engine, "run").map(|e| e.ty) {
        None => return Err(ValidationError::MissingRun { exports }),
        Some(ComponentItem::ComponentFunc(func)) => check_run_type(&func)?,
        Some(other) => {
            return Err(ValidationError::RunSignature {
                problem: format!("`run` is {}, not a function", item_kind(&other)),
            });
        }
    }
    if let Some(name) = imports.iter().find(|name| !is_provided(name)) {
        return Err(ValidationError::UnsupportedImport { name: name.clone() });
    }
    let pre = linker
        .instantiate_pre(component)
        .map_err(|e| ValidationError::ImportMismatch {
            detail: format!("{e:#}"),
        })?;
    let pre = TaskPre::new(pre).map_err(|e| ValidationError::RunSignature {
        problem: format!("{e:#}"),
    })?;
    Ok((pre, Surface { imports, exports }))
}

fn check_resources(component: &Component, max_memory_bytes: u64) -> Result<(), ValidationError> {
    let Some(need) = component.resources_required() else {
        return Err(ValidationError::ExceedsSandbox {
            detail: "the component imports core modules or memories, which the sandbox \
                     does not provide"
                .into(),
        });
    };
    let caps = COMPONENT_CAPS;
    let exceeds = |detail: String| Err(ValidationError::ExceedsSandbox { detail });
    if need.num_memories as usize > caps.memories {
        return exceeds(format!(
            "{} linear memories (the limit is {})",
            need.num_memories, caps.memories
        ));
    }
    if need.num_tables as usize > caps.tables {
        return exceeds(format!(
            "{} tables (the limit is {})",
            need.num_tables, caps.tables
        ));
    }
    let initial = need
        .max_initial_memory_size
        .unwrap_or(0)
        .saturating_mul(64 * 1024);
    if initial > max_memory_bytes {
        return exceeds(format!(
            "an initial memory of {} (the host's ceiling is {})",
            crate::outcome::human_bytes(initial),
            crate::outcome::human_bytes(max_memory_bytes)
        ));
    }
    Ok(())
}

/// `wasi:io/poll@0.2.3` → provided; `wasi:http/types@0.2.0` → not.
fn is_provided(import: &str) -> bool {
    let (path, version) = import.split_once('@').unwrap_or((import, ""));
    if path == HOST_INTERFACE {
        return version.starts_with("0.1.");
    }
    WASI_INTERFACES.contains(&path) && version.starts_with("0.2.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_checks() {
        assert_eq!(
            check_header(b"\0asm\x01\0\0\0", 100),
            Err(ValidationError::CoreModule)
        );
        assert_eq!(check_header(b"\0asm\x0d\0\x01\0", 100), Ok(()));
        assert_eq!(
            check_header(b"hello world", 100),
            Err(ValidationError::NotWasm)
        );
        assert!(matches!(
            check_header(&[0u8; 101], 100),
            Err(ValidationError::TooLarge {
                size: 101,
                limit: 100
            })
        ));
        assert!(matches!(
            check_header(b"\0asm\x02\0\0\0", 100),
            Err(ValidationError::Invalid { .. })
        ));
    }

    #[test]
    fn provided_imports() {
        assert!(is_provided("wasi:io/poll@0.2.0"));
        assert!(is_provided("wasi:cli/environment@0.2.6"));
        assert!(is_provided("sluice:task/host@0.1.0"));
        assert!(!is_provided("sluice:task/host@0.2.0"));
        assert!(!is_provided("wasi:http/types@0.2.0"));
        assert!(!is_provided("wasi:io/poll@0.3.0"));
        assert!(!is_provided("wasi:io/poll"));
        assert!(!is_provided("env"));
    }
}
