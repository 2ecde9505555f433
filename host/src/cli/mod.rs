//! The `sluice` command line: argument parsing and dispatch.
//!
//! Thin by design: every verb parses its arguments, calls the store, the sandbox or the
//! worker, and prints the result as a table or (`--json`) as JSON. No SQL and no wasmtime
//! here; no queue policy either. `task new`, `run`, `test` and `bench` (without a database)
//! run before any connection is made: they work with `DATABASE_URL` unset.

mod attempt_flags;
mod background;
mod components;
mod enqueue;
mod events;
mod flags;
mod flow;
mod job_logs;
mod job_wait;
mod jobs;
mod journal;
mod output;
mod push;
mod run;
mod run_report;
mod schedules;
mod secrets;
mod serve;
mod stats;
mod task_new;
mod tenant_limits;
mod tenants;
mod test_cases;
mod usage;
mod webhooks;
mod worker;
mod workers;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use sluice_store::Store;

pub use flags::Global;
pub use output::Printer;

/// Sluice: background jobs as WebAssembly components, on PostgreSQL.
#[derive(Debug, Parser)]
#[command(name = "sluice", version, about)]
// The shared flags, also accepted before the verb (hidden; see `flags`).
#[command(args = flags::before_any_verb())]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// Parses the process's arguments (exits 2 on a usage error), with the shared flags'
    /// values wherever they were given.
    pub fn parse_with_flags() -> (Cli, Global) {
        let matches = Cli::command().get_matches();
        let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
        (cli, Global::from_matches(&matches))
    }
}

impl Global {
    /// The operator's opened networks (`--egress-allow-network`).
    pub fn networks(&self) -> anyhow::Result<sluice_egress::NetworkPolicy> {
        sluice_egress::NetworkPolicy::parse(&self.egress_allow_networks)
            .map_err(|e| anyhow::anyhow!("--egress-allow-network `{}`: {}", e.input, e.detail))
    }
}

impl Global {
    /// The secrets keys (`--secrets-key-file`, `SLUICE_SECRETS_KEY`, previous keys);
    /// `None` when no key is given.
    pub fn keyring(&self) -> anyhow::Result<Option<sluice_secrets::Keyring>> {
        sluice_shared::secrets::load_keyring(
            self.secrets_key_file.as_deref(),
            &self.secrets_old_key_files,
        )
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create or update the schema (a no-op when it is current); ensures tenant `default`.
    #[command(args = flags::connect(), args = flags::json())]
    Migrate,
    /// Manage tenants, their limits and their API tokens.
    #[command(subcommand, args = flags::connect(), args = flags::json())]
    Tenants(tenants::TenantsCommand),
    /// Upload and inspect task components.
    #[command(subcommand, args = flags::connect(), args = flags::json(), args = flags::tenant())]
    Component(components::ComponentCommand),
    /// Define job types: which component runs them, with which limits.
    #[command(subcommand, args = flags::connect(), args = flags::json(), args = flags::tenant())]
    Types(components::TypesCommand),
    /// Enqueue a job.
    #[command(args = flags::connect(), args = flags::json(), args = flags::tenant())]
    Enqueue(enqueue::EnqueueArgs),
    /// Inspect and steer jobs.
    #[command(subcommand, args = flags::connect(), args = flags::json(), args = flags::tenant())]
    Jobs(jobs::JobsCommand),
    /// Queue depth per state and job type, oldest ready job, lease expirations.
    #[command(args = flags::connect(), args = flags::json(), args = flags::tenant())]
    Stats(stats::StatsArgs),
    /// What the tenant's runs used (runs, fuel, wall time, memory, outbound requests and
    /// bytes, stored bytes), per tenant, job type or hour (docs/usage.md).
    #[command(args = flags::connect(), args = flags::json(), args = flags::tenant())]
    Usage(usage::UsageArgs),
    /// Claim and run jobs.
    #[command(args = flags::connect(), args = flags::json(), args = flags::egress(), args = flags::keys())]
    Worker(Box<worker::WorkerArgs>),
    /// The worker registry: every `sluice worker` and `sluice scheduler`, running, lost
    /// or stopped.
    #[command(subcommand, args = flags::connect(), args = flags::json())]
    Workers(workers::WorkersCommand),
    /// Serve the HTTP API (see docs/http-api.md).
    #[command(args = flags::connect(), args = flags::egress(), args = flags::keys())]
    Serve(serve::ServeArgs),
    /// Cron schedules: one job per slot.
    #[command(subcommand, args = flags::connect(), args = flags::json(), args = flags::tenant())]
    Schedules(schedules::SchedulesCommand),
    /// The tenant's secrets (write-only: values are never shown), and key rotation.
    #[command(subcommand, args = flags::connect(), args = flags::json())]
    Secrets(secrets::SecretsCommand),
    /// Webhook endpoints of the tenant: create (prints the signing secret once), list,
    /// show, update, delete, rotate-secret, test, deliveries, redeliver.
    #[command(subcommand, args = flags::connect(), args = flags::json(), args = flags::tenant())]
    Webhooks(webhooks::WebhooksCommand),
    /// Webhook events: `events send` delivers one to every matching endpoint.
    #[command(subcommand, args = flags::connect(), args = flags::json(), args = flags::tenant())]
    Events(events::EventsCommand),
    /// Fire due schedules and run retention, without claiming jobs.
    #[command(args = flags::connect())]
    Scheduler(background::SchedulerArgs),
    /// Measure throughput and latency (prints one JSON object last).
    #[command(args = flags::connect())]
    Bench(crate::bench::BenchArgs),
    /// Start a task project in Rust, Python, JavaScript or C (no database needed).
    #[command(subcommand, args = flags::json())]
    Task(task_new::TaskCommand),
    /// Run a task component once on a payload, here, with no database: prints the
    /// outcome, output, logs and fuel; the exit code tells completed (0), retry (3),
    /// fatal (4) and limit exceeded (5) apart (docs/cli.md).
    #[command(args = flags::json(), args = flags::egress())]
    Run(Box<run::RunArgs>),
    /// Run a task component's test cases (a JSON file of payloads, secrets and expected
    /// outcomes, outputs and follow-ups), with no database and no network; exit 1 when a
    /// case fails.
    Test(Box<test_cases::TestArgs>),
}

/// The exit code of a verb that failed with `error`: `2` for input `sluice run` cannot
/// use (as clap's usage errors), else `1`.
pub fn exit_code_of(error: &anyhow::Error) -> u8 {
    if error.is::<run::BadInput>() {
        run_report::Exit::BadInput.code()
    } else {
        1
    }
}

/// Run one parsed command; the exit code of its result (`sluice run` has one per
/// outcome, the other verbs succeed with 0).
pub async fn run(cli: Cli, global: Global) -> anyhow::Result<ExitCode> {
    let printer = Printer::new(global.json);
    if let Command::Bench(args) = cli.command {
        let store = match global.database_url {
            Some(_) => Some(connect(&global, "sluice bench").await?),
            None => None,
        };
        let report = crate::bench::run(store, args).await?;
        println!("{report}");
        return Ok(ExitCode::SUCCESS);
    }
    if let Command::Task(command) = cli.command {
        task_new::run(&printer, command)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Command::Run(args) = cli.command {
        return run::run(&global, &printer, *args).await;
    }
    if let Command::Test(args) = cli.command {
        return test_cases::run(*args).await;
    }
    let store = connect(&global, &application_name(&cli.command)).await?;
    if !matches!(cli.command, Command::Migrate) {
        // Every verb but `migrate` needs the schema this binary was built for: say so
        // once, with the fix, instead of failing on a missing relation.
        store.check_schema().await?;
    }
    if let Command::Jobs(jobs::JobsCommand::Wait { id, timeout }) = cli.command {
        return job_wait::run(&store, &global, &printer, id, timeout).await;
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
        Command::Tenants(command) => tenants::run(&store, &global, &printer, command).await?,
        Command::Component(command) => {
            components::run_component(&store, &global, &printer, command).await?
        }
        Command::Types(command) => {
            components::run_types(&store, &global, &printer, command).await?
        }
        Command::Enqueue(args) => enqueue::run(&store, &global, &printer, args).await?,
        Command::Jobs(command) => jobs::run(&store, &global, &printer, command).await?,
        Command::Stats(args) => stats::run(&store, &global, &printer, args).await?,
        Command::Usage(args) => usage::run(&store, &global, &printer, args).await?,
        Command::Worker(args) => worker::run(store, &global, &printer, *args).await?,
        Command::Workers(command) => workers::run(&store, &printer, command).await?,
        Command::Serve(args) => serve::run(store, &global, args).await?,
        Command::Schedules(command) => schedules::run(&store, &global, &printer, command).await?,
        Command::Secrets(command) => secrets::run(&store, &global, &printer, command).await?,
        Command::Webhooks(command) => webhooks::run(&store, &global, &printer, command).await?,
        Command::Events(command) => events::run(&store, &global, &printer, command).await?,
        Command::Scheduler(args) => background::run_standalone(store, args).await?,
        Command::Bench(_) | Command::Task(_) | Command::Run(_) | Command::Test(_) => {
            unreachable!("handled before connecting")
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn connect(global: &Global, application_name: &str) -> anyhow::Result<Store> {
    let url = global.database_url.as_deref().context(
        "no database given: set DATABASE_URL or pass --database-url postgres://user@host/db",
    )?;
    Ok(Store::connect_with(url, application_name, 10).await?)
}

/// What this process's connections say in `pg_stat_activity` (unless the URL sets
/// `application_name`): `sluice worker <id>`, `sluice scheduler <id>`, `sluice serve`,
/// `sluice migrate`, and `sluice cli` for the other verbs.
fn application_name(command: &Command) -> String {
    use sluice_shared::registration::default_worker_id;
    match command {
        Command::Worker(args) => format!(
            "sluice worker {}",
            args.worker_id.clone().unwrap_or_else(default_worker_id)
        ),
        Command::Scheduler(args) => format!(
            "sluice scheduler {}",
            args.worker_id.clone().unwrap_or_else(default_worker_id)
        ),
        Command::Serve(_) => "sluice serve".into(),
        Command::Migrate => "sluice migrate".into(),
        _ => "sluice cli".into(),
    }
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
