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

use crate::contract::{self, Contract};
use crate::engine::COMPONENT_CAPS;
use crate::error::ValidationError;
use crate::host_imports::TaskPre;
use crate::run_signature::{check_run_type, item_kind};
use crate::store::HostState;

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

/// The contract a component's top-level imports need, read from its bytes without
/// compiling it (milliseconds even for an interpreter component). Not a validation: an
/// upload still goes through [`compile`] and [`check_component`]; this is for callers
/// that store components they already trust (benchmarks, test fixtures).
pub fn contract_of(bytes: &[u8]) -> Result<Contract, ValidationError> {
    let mut depth = 0usize;
    let mut imports = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(|e| ValidationError::Invalid {
            detail: e.to_string(),
        })?;
        match payload {
            wasmparser::Payload::Version { .. } => depth += 1,
            wasmparser::Payload::End(_) => depth = depth.saturating_sub(1),
            wasmparser::Payload::ComponentImportSection(reader) if depth == 1 => {
                for import in reader {
                    let import = import.map_err(|e| ValidationError::Invalid {
                        detail: e.to_string(),
                    })?;
                    // Types the world's export uses (`job`, `task-error`) are imported
                    // as types; only instances and functions are capabilities.
                    if !matches!(import.ty, wasmparser::ComponentTypeRef::Type(_)) {
                        imports.push(import.name.name.to_owned());
                    }
                }
            }
            _ => {}
        }
    }
    contract::required(&imports).map_err(|name| ValidationError::UnsupportedImport {
        name: name.to_string(),
    })
}

/// Compiles (parses and validates on the way). Slow: Cranelift runs here.
pub(crate) fn compile(engine: &Engine, bytes: &[u8]) -> Result<Component, ValidationError> {
    Component::new(engine, bytes).map_err(|e| ValidationError::Invalid {
        detail: format!("{e:#}"),
    })
}

/// Names a component imports and exports, and the contract its imports need (for
/// `ComponentInfo`).
pub(crate) struct Surface {
    pub imports: Vec<String>,
    pub exports: Vec<String>,
    pub contract: Contract,
}

/// Everything after compilation: ceilings, the `run` export, imports and the contract
/// they need (at most `max_contract`, the newest this host runs); returns the
/// pre-instantiated task.
pub(crate) fn check_component(
    engine: &Engine,
    linker: &Linker<HostState>,
    component: &Component,
    max_memory_bytes: u64,
    max_contract: Contract,
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
    let needs =
        contract::required(&imports).map_err(|name| ValidationError::UnsupportedImport {
            name: name.to_string(),
        })?;
    if needs > max_contract {
        let import = imports
            .iter()
            .find(|name| contract::providing(name) == Some(needs))
            .cloned()
            .unwrap_or_default();
        return Err(ValidationError::ContractUnsupported {
            needs,
            import,
            supported: max_contract,
        });
    }
    let pre = linker
        .instantiate_pre(component)
        .map_err(|e| ValidationError::ImportMismatch {
            detail: format!("{e:#}"),
        })?;
    let pre = TaskPre::new(pre).map_err(|e| ValidationError::RunSignature {
        problem: format!("{e:#}"),
    })?;
    Ok((
        pre,
        Surface {
            imports,
            exports,
            contract: needs,
        },
    ))
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
}
