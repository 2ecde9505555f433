//! Upload validation: each way a component can be wrong is refused with its own
//! `ValidationError` and a message that says what is wrong and how to fix it.

use crate::common::fixtures;
use crate::common::*;
use sluice_sandbox::{Contract, Sandbox, SandboxConfig, ValidationError};

const MAX: usize = 50 << 20;

#[test]
fn a_real_task_is_accepted() {
    let sb = sandbox();
    let bytes = sample("echo");
    let info = sb.validate(&bytes, MAX).expect("echo is a valid task");
    assert_eq!(info.sha256, sha256_hex(&bytes));
    assert_eq!(info.size_bytes, bytes.len() as u64);
    assert!(
        info.exports.iter().any(|e| e == "run"),
        "{:?}",
        info.exports
    );
    assert!(
        info.imports.iter().all(|i| i.starts_with("wasi:")),
        "{:?}",
        info.imports
    );
    // A task that logs imports the host interface too.
    let info = sb
        .validate(&sample("log-flood"), MAX)
        .expect("log-flood is a valid task");
    assert!(
        info.imports.iter().any(|i| i == "sluice:task/host@0.2.0"),
        "{:?}",
        info.imports
    );
    // The SDK targets contract 0.2; a task that imports none of 0.2's interfaces needs 0.1.
    assert_eq!(info.contract, Contract::V0_2);
    assert_eq!(
        sb.validate(&sample("echo"), MAX).unwrap().contract,
        Contract::V0_1
    );
}

#[test]
fn too_large() {
    let sb = sandbox();
    let err = sb.validate(&vec![0u8; 60 << 20], MAX).unwrap_err();
    assert!(matches!(err, ValidationError::TooLarge { .. }), "{err:?}");
    assert_eq!(err.to_string(), "component is 60 MiB; the limit is 50 MiB");
}

#[test]
fn not_wasm() {
    let sb = sandbox();
    let random: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let err = sb.validate(&random, MAX).unwrap_err();
    assert_eq!(err, ValidationError::NotWasm);
    assert!(
        err.to_string().contains("not a WebAssembly component"),
        "{err}"
    );
}

#[test]
fn core_module() {
    let sb = sandbox();
    let err = sb.validate(b"\0asm\x01\0\0\0", MAX).unwrap_err();
    assert_eq!(err, ValidationError::CoreModule);
    assert_eq!(
        err.to_string(),
        "this is a core wasm module, not a component: build for wasm32-wasip2 or run \
         `wasm-tools component new`"
    );
}

#[test]
fn empty_component_does_not_export_run() {
    let sb = sandbox();
    let err = sb.validate(b"\0asm\x0d\0\x01\0", MAX).unwrap_err();
    assert_eq!(err, ValidationError::MissingRun { exports: vec![] });
    assert!(err.to_string().contains("does not export `run`"), "{err}");
}

#[test]
fn run_with_the_wrong_signature() {
    let sb = sandbox();
    let err = sb.validate(fixtures::WRONG_RUN, MAX).unwrap_err();
    assert!(
        matches!(err, ValidationError::RunSignature { .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("takes 0 parameters, expected 1 (job)"),
        "{msg}"
    );

    let err = sb.validate(fixtures::WRONG_FIELD, MAX).unwrap_err();
    assert!(
        matches!(err, ValidationError::RunSignature { .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("field `payload`: found string, expected list<u8>"),
        "{msg}"
    );
}

#[test]
fn import_the_host_does_not_provide() {
    // The fixture imports `wasi:http/outgoing-handler@0.2.0`; renamed (same length), it
    // imports an interface no contract provides.
    let mut bytes = fixtures::HTTP_IMPORT.to_vec();
    let at = bytes
        .windows(9)
        .position(|w| w == b"wasi:http")
        .expect("the fixture names wasi:http");
    bytes[at..at + 9].copy_from_slice(b"wasi:nope");
    let err = sandbox().validate(&bytes, MAX).unwrap_err();
    assert_eq!(
        err,
        ValidationError::UnsupportedImport {
            name: "wasi:nope/outgoing-handler@0.2.0".into()
        }
    );
    assert!(
        err.to_string().contains(
            "imports `wasi:nope/outgoing-handler@0.2.0`, which the host does not provide"
        ),
        "{err}"
    );
}

#[test]
fn a_wasi_http_import_needs_contract_0_2_and_the_right_types() {
    // On a host limited to 0.1 the import is a newer contract, named as such.
    let old = Sandbox::new(SandboxConfig {
        max_contract: Contract::V0_1,
        ..crate::common::config()
    })
    .unwrap();
    let err = old.validate(fixtures::HTTP_IMPORT, MAX).unwrap_err();
    assert_eq!(
        err,
        ValidationError::ContractUnsupported {
            needs: Contract::V0_2,
            import: "wasi:http/outgoing-handler@0.2.0".into(),
            supported: Contract::V0_1,
        }
    );
    // On a 0.2 host the name is provided, but this fixture's `handle` has the wrong type.
    let err = sandbox().validate(fixtures::HTTP_IMPORT, MAX).unwrap_err();
    assert!(
        matches!(err, ValidationError::ImportMismatch { .. }),
        "{err}"
    );
}

#[test]
fn prepare_refuses_bytes_that_do_not_match_their_hash() {
    let sb = sandbox();
    let bytes = sample("echo");
    let err = sb.prepare(&"0".repeat(64), &bytes).unwrap_err();
    assert!(
        matches!(err, sluice_sandbox::SandboxError::HashMismatch { .. }),
        "{err:?}"
    );
}

#[test]
fn prepare_refuses_an_invalid_component() {
    let sb = sandbox();
    let bytes = fixtures::WRONG_RUN;
    let err = sb.prepare(&sha256_hex(bytes), bytes).unwrap_err();
    assert!(
        matches!(
            err,
            sluice_sandbox::SandboxError::Invalid(ValidationError::RunSignature { .. })
        ),
        "{err:?}"
    );
}

#[test]
fn contract_of_reads_the_same_contract_as_validation_without_compiling() {
    let sb = sandbox();
    for name in [
        "echo",
        "log-flood",
        "http-get",
        "post-json",
        "flaky",
        "clock",
    ] {
        let bytes = sample(name);
        let validated = sb.validate(&bytes, MAX).unwrap().contract;
        assert_eq!(
            sluice_sandbox::contract_of(&bytes).unwrap(),
            validated,
            "{name}"
        );
    }
    // Not a component: an error, not a guess.
    assert!(sluice_sandbox::contract_of(b"not wasm").is_err());
}
