//! The `sluice` command line: argument parsing and dispatch.
//!
//! Thin by design: every verb parses its arguments, calls the store, the sandbox or the
//! worker, and prints the result as a table or (`--json`) as JSON. No SQL and no wasmtime
//! here; no queue policy either.

mod background;
mod components;
mod enqueue;
mod events;
mod job_logs;
mod jobs;
mod output;
mod push;
mod schedules;
mod secrets;
mod serve;
mod stats;
mod task_new;
mod tenants;
mod webhooks;
mod worker;
mod workers;

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use sluice_store::Store;

pub use output::Printer;

/// Sluice: background jobs as WebAssembly components, on PostgreSQL.
#[derive(Debug, Parser)]
#[command(name = "sluice", version, about)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every verb accepts.
#[derive(Debug, Args)]
pub struct Global {
    /// PostgreSQL connection string.
    #[arg(long, env = "DATABASE_URL", global = true, hide_env_values = true)]
    pub database_url: Option<String>,
    /// The tenant to act for.
    #[arg(long, env = "SLUICE_TENANT", global = true, default_value = "default")]
    pub tenant: String,
    /// Print machine-readable JSON instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
    /// Log format on stderr.
    #[arg(long, global = true, value_enum, default_value = "pretty")]
    pub log_format: LogFormat,
    /// Networks outbound HTTP may reach despite the deny list of private and special
    /// addresses, as CIDR (repeatable or comma-separated), e.g. `10.1.0.0/16`. Also lets
    /// allow lists name IP literals inside them. Logged when a worker starts.
    #[arg(
        long = "egress-allow-network",
        env = "SLUICE_EGRESS_ALLOW_NETWORK",
        global = true,
        value_delimiter = ',',
        value_name = "CIDR"
    )]
    pub egress_allow_networks: Vec<String>,
    /// File holding the secrets key: 64 hex characters (32 random bytes, e.g. from
    /// `openssl rand -hex 32`), a trailing newline allowed. Or set SLUICE_SECRETS_KEY to
    /// the key itself. Used by worker, serve, secrets set, secrets rotate-key, webhooks
    /// create and webhooks rotate-secret
    /// (docs/secrets.md).
    #[arg(
        long,
        env = "SLUICE_SECRETS_KEY_FILE",
        global = true,
        value_name = "PATH"
    )]
    pub secrets_key_file: Option<PathBuf>,
    /// A previous secrets key that only decrypts, during a rotation (repeatable; or
    /// SLUICE_SECRETS_OLD_KEYS, comma-separated keys).
    #[arg(long = "secrets-old-key-file", global = true, value_name = "PATH")]
    pub secrets_old_key_files: Vec<PathBuf>,
}

impl Global {
    /// The operator's opened networks (`--egress-allow-network`).
    pub fn networks(&self) -> anyhow::Result<sluice_sandbox::sluice_egress::NetworkPolicy> {
        sluice_sandbox::sluice_egress::NetworkPolicy::parse(&self.egress_allow_networks)
            .map_err(|e| anyhow::anyhow!("--egress-allow-network `{}`: {}", e.input, e.detail))
    }
}

impl Global {
    /// The secrets keys (`--secrets-key-file`, `SLUICE_SECRETS_KEY`, previous keys);
    /// `None` when no key is given.
    pub fn keyring(&self) -> anyhow::Result<Option<sluice_secrets::Keyring>> {
        crate::secrets::load_keyring(
            self.secrets_key_file.as_deref(),
            &self.secrets_old_key_files,
        )
    }
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum LogFormat {
    Pretty,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create or update the schema (a no-op when it is current); ensures tenant `default`.
    Migrate,
    /// Manage tenants, their limits and their API tokens.
    #[command(subcommand)]
    Tenants(tenants::TenantsCommand),
    /// Upload and inspect task components.
    #[command(subcommand)]
    Component(components::ComponentCommand),
    /// Define job types: which component runs them, with which limits.
    #[command(subcommand)]
    Types(components::TypesCommand),
    /// Enqueue a job.
    Enqueue(enqueue::EnqueueArgs),
    /// Inspect and steer jobs.
    #[command(subcommand)]
    Jobs(jobs::JobsCommand),
    /// Queue depth per state and job type, oldest ready job, lease expirations.
    Stats(stats::StatsArgs),
    /// Claim and run jobs.
    Worker(worker::WorkerArgs),
    /// The worker registry: every `sluice worker` and `sluice scheduler`, running, lost
    /// or stopped.
    #[command(subcommand)]
    Workers(workers::WorkersCommand),
    /// Serve the HTTP API (see docs/http-api.md).
    Serve(serve::ServeArgs),
    /// Cron schedules: one job per slot.
    #[command(subcommand)]
    Schedules(schedules::SchedulesCommand),
    /// The tenant's secrets (write-only: values are never shown), and key rotation.
    #[command(subcommand)]
    Secrets(secrets::SecretsCommand),
    /// Webhook endpoints of the tenant: create (prints the signing secret once), list,
    /// show, update, delete, rotate-secret, test, deliveries, redeliver.
    #[command(subcommand)]
    Webhooks(webhooks::WebhooksCommand),
    /// Webhook events: `events send` delivers one to every matching endpoint.
    #[command(subcommand)]
    Events(events::EventsCommand),
    /// Fire due schedules and run retention, without claiming jobs.
    Scheduler(background::SchedulerArgs),
    /// Measure throughput and latency (prints one JSON object last).
    Bench(crate::bench::BenchArgs),
    /// Start a task project in Rust, Python, JavaScript or C (no database needed).
    #[command(subcommand)]
    Task(task_new::TaskCommand),
}

/// Run one parsed command.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    let printer = Printer::new(cli.global.json);
    if let Command::Bench(args) = cli.command {
        let store = match cli.global.database_url {
            Some(_) => Some(connect(&cli.global).await?),
            None => None,
        };
        let report = crate::bench::run(store, args).await?;
        println!("{report}");
        return Ok(());
    }
    if let Command::Task(command) = cli.command {
        return task_new::run(&printer, command);
    }
    let store = connect(&cli.global).await?;
    if !matches!(cli.command, Command::Migrate) {
        // Every verb but `migrate` needs the schema this binary was built for: say so
        // once, with the fix, instead of failing on a missing relation.
        store.check_schema().await?;
    }
    match cli.command {
        Command::Migrate => {
            store.migrate().await.context("apply migrations")?;
            store
                .create_tenant("default")
                .await
                .context("create tenant `default`")?;
            printer.message("schema is up to date");
        }
        Command::Tenants(command) => tenants::run(&store, &cli.global, &printer, command).await?,
        Command::Component(command) => {
            components::run_component(&store, &cli.global, &printer, command).await?
        }
        Command::Types(command) => {
            components::run_types(&store, &cli.global, &printer, command).await?
        }
        Command::Enqueue(args) => enqueue::run(&store, &cli.global, &printer, args).await?,
        Command::Jobs(command) => jobs::run(&store, &cli.global, &printer, command).await?,
        Command::Stats(args) => stats::run(&store, &cli.global, &printer, args).await?,
        Command::Worker(args) => worker::run(store, &cli.global, &printer, args).await?,
        Command::Workers(command) => workers::run(&store, &printer, command).await?,
        Command::Serve(args) => serve::run(store, &cli.global, args).await?,
        Command::Schedules(command) => {
            schedules::run(&store, &cli.global, &printer, command).await?
        }
        Command::Secrets(command) => secrets::run(&store, &cli.global, &printer, command).await?,
        Command::Webhooks(command) => webhooks::run(&store, &cli.global, &printer, command).await?,
        Command::Events(command) => events::run(&store, &cli.global, &printer, command).await?,
        Command::Scheduler(args) => background::run_standalone(store, args).await?,
        Command::Bench(_) | Command::Task(_) => unreachable!("handled before connecting"),
    }
    Ok(())
}

async fn connect(global: &Global) -> anyhow::Result<Store> {
    let url = global.database_url.as_deref().context(
        "no database given: set DATABASE_URL or pass --database-url postgres://user@host/db",
    )?;
    Store::connect(url).await
}

/// Read a file named on the command line, saying which file failed.
fn read_file(path: &PathBuf) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("read {}", path.display()))
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_tree_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
