//! Tenant secrets end to end through the real `sluice` binary. This module holds the
//! area's helpers (`define_call`, `enqueue`, `server`); the cases are in its submodules:
//! `management` (set, list and delete over the CLI and the HTTP API, tenant-scoped),
//! `keys` (a worker without the key, or with another key, leaves jobs of types granted
//! secrets pending without spending an attempt and says why; `secrets rotate-key` while a
//! worker runs loses nothing) and `masking` (`bearer-call` sends its secret as a bearer
//! token to a server on 127.0.0.1, which sees the value, while the worker's log,
//! `last_error`, the stored attempt logs and a `pg_dump` of the database never hold it;
//! another tenant's type granted the same name gets `not-found`).

mod keys;
mod management;
mod masking;

use crate::egress_support::{Reply, TestServer};
use crate::support::Sluice;
use serde_json::Value;

/// The operator's opening for the test server, and nothing else.
const LOOPBACK: &str = "127.0.0.1/32";

fn enqueue(sluice: &Sluice, tenant: &str, job_type: &str, payload: Value) -> String {
    let args = [
        "--tenant",
        tenant,
        "enqueue",
        job_type,
        "--payload",
        &payload.to_string(),
    ];
    let job = sluice.json(&args);
    job["id"].as_i64().unwrap().to_string()
}

/// `bearer-call` pushed to `tenant` as type `call`, granted `secrets` and `origin`.
fn define_call(sluice: &Sluice, tenant: &str, origin: &str, secrets: &[&str]) {
    let file = crate::support::sample("bearer-call");
    let push = [
        "--tenant",
        tenant,
        "component",
        "push",
        file.to_str().unwrap(),
        "--name",
        "bearer-call",
    ];
    sluice.ok(&push);
    let mut args = vec![
        "--tenant",
        tenant,
        "types",
        "set",
        "call",
        "--component",
        "bearer-call",
        "--allow-http",
        origin,
        "--egress-allow-network",
        LOOPBACK,
        "--max-attempts",
        "1",
    ];
    for name in secrets {
        args.extend(["--secret", name]);
    }
    sluice.ok(&args);
}

/// Test servers on their own runtime (the test's thread blocks on the binary).
fn server(runtime: &tokio::runtime::Runtime) -> TestServer {
    let handle = runtime.handle().clone();
    std::thread::spawn(move || handle.block_on(TestServer::start(Reply::ok("ok"))))
        .join()
        .unwrap()
}
