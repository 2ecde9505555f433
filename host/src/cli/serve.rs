//! `sluice serve`: the HTTP API on one address until SIGTERM/SIGINT, then finish the
//! requests in flight. Everything else is in `sluice_http::serve` (the API is `sluice_http::api`).

use std::net::SocketAddr;

use anyhow::Context;
use sluice_sandbox::{EgressConfig, Sandbox, SandboxConfig};
use sluice_store::Store;
use tracing::info;

use sluice_http::app_state::{AppState, ServeConfig};
use sluice_http::serve;
use sluice_shared::units::{parse_duration, parse_size};

/// Every default is the library's own (`ServeConfig::default()`,
/// `serve::DEFAULT_HEADER_TIMEOUT`): `flag_defaults_are_the_apis_defaults` holds them
/// together.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// A token accepted as admin for any tenant, besides admin tokens in the database.
    #[arg(long, env = "SLUICE_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// Component size limit for tenants without their own `max_component_bytes`.
    #[arg(long, value_parser = parse_size, default_value = "50MiB")]
    pub max_component_size: u64,
    /// Largest JSON request body.
    #[arg(long, value_parser = parse_size, default_value = "16MiB")]
    pub max_request_body: u64,
    /// Require an admin token (`Authorization: Bearer …`) on `/metrics`.
    #[arg(long)]
    pub metrics_auth: bool,
    /// Longest wait for the next piece of a request body; a stalled one is answered 408.
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    pub body_timeout: std::time::Duration,
    /// Longest wait for a request's line and headers (idle keep-alive included); the
    /// connection is then closed.
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    pub header_timeout: std::time::Duration,
    /// Longest a `GET /v1/jobs/{id}?wait=` request waits (at most 300s, the API's
    /// longest): a longer one answers then with the job as it is. Below a proxy's idle
    /// timeout, e.g. `50s` behind one that cuts idle connections at 60 s.
    #[arg(long, value_parser = parse_duration, default_value = "300s")]
    pub max_wait: std::time::Duration,
    /// LISTEN for finished jobs (`GET /v1/jobs/{id}?wait=`) on this direct connection
    /// instead of a pool connection: set it when DATABASE_URL points at a transaction
    /// pooler (which drops LISTEN).
    #[arg(long, env = "SLUICE_DIRECT_DATABASE_URL", hide_env_values = true)]
    pub direct_database_url: Option<String>,
}

pub async fn run(store: Store, global: &super::Global, args: ServeArgs) -> anyhow::Result<()> {
    let shutdown = crate::signals::shutdown_on_signal("finishing requests in flight, then exiting");
    store.check_schema().await?;
    let store = match &args.direct_database_url {
        Some(url) => store.with_direct_url(url),
        None => store,
    };
    if let Some(token) = &args.admin_token
        && token.len() < 32
    {
        anyhow::bail!(
            "SLUICE_ADMIN_TOKEN is {} characters; use at least 32 random characters \
             (e.g. `openssl rand -hex 32`)",
            token.len()
        );
    }
    if args.max_wait.is_zero() || args.max_wait > sluice_http::api::MAX_JOB_WAIT {
        anyhow::bail!(
            "--max-wait must be more than 0 and at most {}s (the API's longest wait)",
            sluice_http::api::MAX_JOB_WAIT.as_secs()
        );
    }
    if args.body_timeout.is_zero() || args.header_timeout.is_zero() {
        anyhow::bail!("--body-timeout and --header-timeout must be more than 0; give e.g. 30s");
    }
    // Only validates uploads: one slot, one guest thread.
    let sandbox = Sandbox::new(SandboxConfig {
        max_concurrency: 1,
        guest_threads: 1,
        // Allow lists may name IP literals only inside the operator's opened networks.
        egress: EgressConfig {
            networks: global.networks()?,
            ..EgressConfig::default()
        },
        ..SandboxConfig::default()
    })
    .context("start the sandbox that validates uploads")?;
    let tracer = crate::traces::from_env("sluice-api")?;
    let state = AppState::new(
        store,
        sandbox,
        ServeConfig {
            admin_token: args.admin_token,
            default_max_component_bytes: args.max_component_size,
            max_request_body: usize::try_from(args.max_request_body)
                .context("--max-request-body is too large")?,
            metrics_require_admin: args.metrics_auth,
            body_timeout: args.body_timeout,
            secrets: global.keyring()?,
            max_job_wait: args.max_wait,
            tracer: tracer.clone(),
        },
    );
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("listen on {}", args.listen))?;
    info!(address = %listener.local_addr()?, "serving the HTTP API");
    // Requests waiting for jobs answer at once when the server stops.
    let waits = state.finish_waits().clone();
    let stopping = async move {
        shutdown.cancelled().await;
        waits.close();
    };
    serve::serve_with(listener, serve::app(state), args.header_timeout, stopping)
        .await
        .context("serve HTTP")?;
    crate::traces::flush(&tracer).await;
    info!("HTTP API stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(clap::Parser)]
    struct Serve {
        #[command(flatten)]
        args: ServeArgs,
    }

    #[test]
    fn flag_defaults_are_the_apis_defaults() {
        let args = Serve::try_parse_from(["serve"]).unwrap().args;
        let defaults = ServeConfig::default();
        assert_eq!(
            args.max_component_size,
            defaults.default_max_component_bytes
        );
        assert_eq!(args.max_request_body, defaults.max_request_body as u64);
        assert_eq!(args.body_timeout, defaults.body_timeout);
        assert_eq!(args.max_wait, defaults.max_job_wait);
        assert_eq!(args.max_wait, sluice_http::api::MAX_JOB_WAIT);
        assert_eq!(args.header_timeout, serve::DEFAULT_HEADER_TIMEOUT);
        assert!(!args.metrics_auth && !defaults.metrics_require_admin);
    }
}
