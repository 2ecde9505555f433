//! What the benchmarks set up before they time anything: sample components read from
//! disk, uploaded and precompiled, and the bench tenant's job types (their HTTP grants,
//! durability). Untimed; must not time or report anything.

use anyhow::Context;
use sluice_sandbox::Sandbox;
use sluice_store::{JobTypeSpec, NewComponent, Store};

use super::BENCH_TENANT;

/// A built sample component's bytes (`--samples DIR`).
pub(super) fn read_sample(dir: &std::path::Path, file: &str) -> anyhow::Result<Vec<u8>> {
    std::fs::read(dir.join(file)).with_context(|| {
        format!(
            "read {file} from {} (run scripts/build-samples)",
            dir.display()
        )
    })
}

/// Uploads a sample component, registers job type `name` for it and prepares it in the
/// sandbox, untimed: a worker host has its components precompiled before its first job
/// (`sluice component push` writes them into the worker's disk cache), so the timed
/// worker finds it ready instead of compiling it while its first jobs wait.
pub(super) async fn define_sample(
    store: &Store,
    sandbox: &Sandbox,
    name: &str,
    bytes: &[u8],
) -> anyhow::Result<()> {
    define_sample_for(store, sandbox, BENCH_TENANT, name, bytes).await
}

/// Gives a defined job type of the bench tenant an outbound HTTP allow list (none when
/// empty), durable or not.
pub(super) async fn set_type(
    store: &Store,
    job_type: &str,
    allow: &[String],
    durable: bool,
) -> anyhow::Result<()> {
    // The bench's own receiver (`--task steps`) is on 127.0.0.1.
    let loopback = sluice_egress::NetworkPolicy::parse(["127.0.0.1/32"]).context("loopback")?;
    let allow = sluice_shared::grants::normalise("--allow-http", allow, &loopback)?;
    let record = store
        .get_job_type(BENCH_TENANT, job_type)
        .await?
        .context("the bench job type is defined")?;
    let spec = JobTypeSpec {
        http: sluice_store::HttpSpec {
            allow,
            ..Default::default()
        },
        durable,
        ..JobTypeSpec::new(BENCH_TENANT, job_type, record.component_id)
    };
    store.set_job_type(&spec).await?;
    Ok(())
}

/// [`define_sample`] for another tenant.
pub(super) async fn define_sample_for(
    store: &Store,
    sandbox: &Sandbox,
    tenant: &str,
    name: &str,
    bytes: &[u8],
) -> anyhow::Result<()> {
    sandbox.validate(bytes, 50 << 20)?;
    let component = store
        .put_component(&NewComponent {
            tenant: tenant.into(),
            name: name.into(),
            version: None,
            bytes: bytes.to_vec(),
            contract: sluice_sandbox::contract_of(bytes)?.minor(),
        })
        .await?;
    store
        .set_job_type(&JobTypeSpec::new(tenant, name, component.id))
        .await?;
    sandbox.prepare(&component.sha256, bytes)?;
    Ok(())
}
