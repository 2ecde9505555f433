//! Tenant secrets through the real binary: a fresh key, `sluice` commands given it (or
//! none) through `SLUICE_SECRETS_KEY`, `secrets set` with the value on stdin.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use sluice_secrets::SecretKey;

use super::Sluice;

/// A fresh secrets key, as its 64 hex characters.
pub fn new_key() -> String {
    SecretKey::generate().unwrap().to_hex().to_string()
}

/// The id `sluice secrets list` shows for a key.
pub fn key_id(hex: &str) -> String {
    SecretKey::parse("test", hex).unwrap().id().to_owned()
}

/// `sluice ARGS` with the key in SLUICE_SECRETS_KEY (`None`: no key).
pub fn keyed(sluice: &Sluice, key: Option<&str>, args: &[&str]) -> Command {
    let mut command = sluice.command(args);
    command.env_remove("SLUICE_SECRETS_KEY");
    if let Some(key) = key {
        command.env("SLUICE_SECRETS_KEY", key);
    }
    command
}

/// Runs `command` with `stdin` (or an empty one) and collects its output.
pub fn output_of(mut command: Command, stdin: Option<&[u8]>) -> Output {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("run sluice");
    let mut pipe = child.stdin.take().unwrap();
    if let Some(bytes) = stdin {
        pipe.write_all(bytes).unwrap();
    }
    drop(pipe);
    child.wait_with_output().unwrap()
}

/// Runs `command` and requires success; returns stdout.
pub fn ok(command: Command, stdin: Option<&[u8]>) -> String {
    let out = output_of(command, stdin);
    assert!(
        out.status.success(),
        "failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `sluice --json --tenant T secrets set NAME` with `value` on stdin.
pub fn set_secret(sluice: &Sluice, key: &str, tenant: &str, name: &str, value: &str) {
    let args = ["--json", "--tenant", tenant, "secrets", "set", name];
    ok(keyed(sluice, Some(key), &args), Some(value.as_bytes()));
}

/// `sluice --json worker --drain` with the key, logging at `info`, its egress opened to
/// `network` (the test servers'); requires success and returns the worker's log.
pub fn drain(sluice: &Sluice, key: &str, network: &str) -> String {
    let args = [
        "--json",
        "worker",
        "--drain",
        "--egress-allow-network",
        network,
    ];
    let mut worker = keyed(sluice, Some(key), &args);
    worker.env("SLUICE_LOG", "info");
    let out = output_of(worker, None);
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{log}");
    log
}
