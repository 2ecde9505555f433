//! `sluice component push|list|show` and `sluice types set|list|show|pause|resume`: shipping a task
//! component and pointing a job type at it. Validation is the sandbox's; storage is the
//! store's; `--json` prints the views of `sluice_wire` (what `/v1/components` and
//! `/v1/job-types` answer).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Subcommand;
use sluice_store::{ComponentRecord, JobTypeRecord, JobTypeSpec, Store};

use super::Global;
use super::output::{Printer, clip};
use sluice_shared::units::{format_size, parse_duration, parse_size};
use sluice_wire::{ComponentDetail, ComponentView, JobTypeView};

#[derive(Debug, Subcommand)]
pub enum ComponentCommand {
    /// Validate a component against the task world and store it.
    Push {
        /// The `.wasm` component file.
        file: PathBuf,
        /// Name to store it under (default: the file name without `.wasm`).
        #[arg(long)]
        name: Option<String>,
        /// Version label (default: the next integer).
        #[arg(long)]
        version: Option<String>,
        /// Refuse components larger than this.
        #[arg(long, value_parser = parse_size, default_value = "50MiB")]
        max_size: u64,
        /// This host's cache of precompiled components (the one `sluice worker` reads):
        /// the push compiles into it, so a worker here never compiles while a job waits.
        #[arg(long, env = "SLUICE_CACHE_DIR")]
        cache_dir: Option<PathBuf>,
    },
    /// List stored components.
    List,
    /// Show one component (`NAME` for the latest version, or `NAME@VERSION`) and the job
    /// types that run it.
    Show {
        /// `NAME` or `NAME@VERSION`.
        component: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum TypesCommand {
    /// Create or update a job type.
    #[command(args = super::flags::egress())]
    Set(Box<TypeArgs>),
    /// List job types.
    List,
    /// Show one job type: its component and every limit (null: the host default).
    Show {
        /// The job type's name.
        name: String,
    },
    /// Pause a job type: none of its jobs is claimed until `resume`; running ones
    /// finish, nothing is lost (docs/flow-control.md).
    Pause {
        /// The job type's name.
        name: String,
    },
    /// Resume a paused job type.
    Resume {
        /// The job type's name.
        name: String,
    },
}

#[derive(Debug, clap::Args)]
pub struct TypeArgs {
    /// Job type name, e.g. `send-email`.
    pub name: String,
    /// Component that runs it: `NAME` (latest version) or `NAME@VERSION`. Required to
    /// create or replace the type; without it only the flow-control flags below change.
    #[arg(long)]
    pub component: Option<String>,
    #[command(flatten)]
    pub flow: super::flow::FlowArgs,
    #[command(flatten)]
    pub limits: super::attempt_flags::LimitFlags,
    /// Default attempts for jobs of this type.
    #[arg(long)]
    pub max_attempts: Option<i32>,
    /// First retry delay (doubles each attempt).
    #[arg(long, value_parser = parse_duration)]
    pub backoff_base: Option<Duration>,
    /// Longest retry delay.
    #[arg(long, value_parser = parse_duration)]
    pub backoff_cap: Option<Duration>,
    #[command(flatten)]
    pub http: super::attempt_flags::HttpFlags,
    /// Let attempts read the tenant's secret NAME (`sluice:task/secrets`). Repeatable;
    /// none: no secrets. The name may be set later (docs/secrets.md).
    #[arg(long = "secret", value_name = "NAME")]
    pub secrets: Vec<String>,
    /// Durable: journal every host call's result, so a retried attempt replays them
    /// instead of repeating them (docs/durable.md).
    #[arg(long, overrides_with = "no_durable")]
    pub durable: bool,
    /// Not durable (the default): every retry runs the task from the start.
    #[arg(long, overrides_with = "durable")]
    pub no_durable: bool,
    /// The cap on one durable job's journal (default 16MiB); past it the attempt ends
    /// `fatal`.
    #[arg(long, value_parser = parse_size)]
    pub journal_bytes: Option<u64>,
}

pub async fn run_component(
    store: &Store,
    global: &Global,
    printer: &Printer,
    command: ComponentCommand,
) -> anyhow::Result<()> {
    match command {
        ComponentCommand::Push {
            file,
            name,
            version,
            max_size,
            cache_dir,
        } => {
            let args = super::push::PushArgs {
                file,
                name,
                version,
                max_size,
                cache_dir: cache_dir.unwrap_or_else(sluice_shared::registration::default_cache_dir),
            };
            super::push::push(store, global, printer, args).await?;
        }
        ComponentCommand::List => {
            let components = store.list_components(Some(&global.tenant)).await?;
            printer.table(
                components,
                &[
                    "id", "name", "version", "size", "contract", "sha256", "created",
                ],
                |c| {
                    vec![
                        c.id.to_string(),
                        c.name.clone(),
                        c.version.clone(),
                        format_size(c.size as u64),
                        format!("0.{}", c.contract),
                        clip(&c.sha256, 12),
                        c.created_at.format("%Y-%m-%d %H:%M:%S").to_string(),
                    ]
                },
                ComponentView::from,
            );
        }
        ComponentCommand::Show { component } => {
            let record = find(store, &global.tenant, &component).await?;
            let types: Vec<String> = store
                .list_job_types(Some(&global.tenant))
                .await?
                .into_iter()
                .filter(|t| t.component_id == record.id)
                .map(|t| t.name)
                .collect();
            let fields = [
                ("component", format!("{}@{}", record.name, record.version)),
                ("id", record.id.to_string()),
                ("sha256", record.sha256.clone()),
                ("size", format_size(record.size as u64)),
                ("contract", sluice_wire::contract_label(record.contract)),
                ("uploaded", record.created_at.to_rfc3339()),
                (
                    "job types",
                    if types.is_empty() {
                        "(none)".to_owned()
                    } else {
                        types.join(", ")
                    },
                ),
            ];
            printer.value(&ComponentDetail::new(record, types), &fields);
        }
    }
    Ok(())
}

/// A component of `tenant` by `NAME` (latest version) or `NAME@VERSION`.
async fn find(store: &Store, tenant: &str, component: &str) -> anyhow::Result<ComponentRecord> {
    let (name, version) = match component.split_once('@') {
        Some((name, version)) => (name, Some(version)),
        None => (component, None),
    };
    store
        .find_component(tenant, name, version)
        .await?
        .with_context(|| {
            format!(
                "no component `{component}` for tenant `{tenant}`; `sluice component list` shows them, `sluice component push` uploads one"
            )
        })
}

pub async fn run_types(
    store: &Store,
    global: &Global,
    printer: &Printer,
    command: TypesCommand,
) -> anyhow::Result<()> {
    let pausing = matches!(command, TypesCommand::Pause { .. });
    match command {
        TypesCommand::Set(args) => {
            let flow = args.flow.change();
            let Some(component_name) = args.component.clone() else {
                let change = flow.context(
                    "give --component to create or replace the type, or a flow-control flag (--max-running, --max-running-per-key, --rate, --rate-per-key) to change those alone",
                )?;
                store.set_flow(&global.tenant, &args.name, &change).await?;
                return show_type(store, &global.tenant, &args.name, printer).await;
            };
            let networks = global.networks()?;
            let component = find(store, &global.tenant, &component_name).await?;
            let spec = JobTypeSpec {
                max_attempts: args.max_attempts.unwrap_or(3),
                backoff_base: args.backoff_base,
                backoff_cap: args.backoff_cap,
                timeout: args.limits.timeout,
                fuel: args.limits.fuel,
                memory_bytes: args.limits.memory,
                output_bytes: args.limits.max_output,
                log_bytes: args.limits.max_log,
                http: args.http.spec(),
                secrets: args.secrets,
                durable: args.durable && !args.no_durable,
                journal_bytes: args.journal_bytes,
                ..JobTypeSpec::new(global.tenant.clone(), args.name, component.id)
            };
            let name = spec.name.clone();
            sluice_shared::grants::set_job_type(store, spec, "--allow-http", &networks).await?;
            if let Some(change) = flow {
                store.set_flow(&global.tenant, &name, &change).await?;
            }
            show_type(store, &global.tenant, &name, printer).await?;
        }
        TypesCommand::Show { name } => show_type(store, &global.tenant, &name, printer).await?,
        TypesCommand::Pause { name } | TypesCommand::Resume { name } => {
            store
                .set_flow(&global.tenant, &name, &super::flow::pause(pausing))
                .await?;
            show_type(store, &global.tenant, &name, printer).await?;
        }
        TypesCommand::List => {
            let types = store.list_job_types(Some(&global.tenant)).await?;
            printer.table(
                types,
                &[
                    "type",
                    "component id",
                    "max attempts",
                    "timeout",
                    "http",
                    "secrets",
                    "paused",
                ],
                |t| {
                    vec![
                        t.name.clone(),
                        t.component_id.to_string(),
                        t.max_attempts.to_string(),
                        match t.timeout_ms {
                            None => "default".into(),
                            Some(0) => "none".into(),
                            Some(ms) => format!("{ms}ms"),
                        },
                        allow_text(&t.http_allow),
                        allow_text(&t.secrets),
                        if t.flow.paused { "yes" } else { "no" }.to_owned(),
                    ]
                },
                JobTypeView::from,
            );
        }
    }
    Ok(())
}

/// Prints job type `name` of `tenant` (see [`print_type`]).
async fn show_type(
    store: &Store,
    tenant: &str,
    name: &str,
    printer: &Printer,
) -> anyhow::Result<()> {
    let record = store.get_job_type(tenant, name).await?.with_context(|| {
        format!(
            "no job type `{name}` for tenant `{tenant}`; `sluice types list` shows them, `sluice types set` makes one"
        )
    })?;
    let component = store
        .get_component(record.component_id)
        .await?
        .context("the job type's component is gone")?;
    print_type(printer, record, &component);
    Ok(())
}

/// A job type for people (its component by name, its grants, its flow controls), or its
/// view as JSON.
fn print_type(printer: &Printer, record: JobTypeRecord, component: &ComponentRecord) {
    let mut fields = vec![
        ("type", record.name.clone()),
        (
            "component",
            format!("{}@{}", component.name, component.version),
        ),
        ("max attempts", record.max_attempts.to_string()),
        ("http", allow_text(&record.http_allow)),
        ("secrets", allow_text(&record.secrets)),
        (
            "durable",
            match (record.durable, record.journal_bytes) {
                (false, _) => "no".to_owned(),
                (true, None) => "yes (journal up to 16MiB)".to_owned(),
                (true, Some(cap)) => format!("yes (journal up to {})", format_size(cap as u64)),
            },
        ),
    ];
    fields.extend(super::flow::fields(&record.flow));
    printer.value(&JobTypeView::from(record), &fields);
}

/// An allow list (or granted secret names) as one cell: its entries, or `none`.
fn allow_text(entries: &[String]) -> String {
    if entries.is_empty() {
        "none".to_owned()
    } else {
        entries.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(clap::Parser)]
    struct Component {
        #[command(subcommand)]
        command: ComponentCommand,
    }

    /// `component push`'s limit is the one `sluice serve` applies to tenants without
    /// their own (`ServeConfig::default_max_component_bytes`).
    #[test]
    fn the_push_size_limits_default_is_the_apis() {
        let parsed = Component::try_parse_from(["component", "push", "a.wasm"]).unwrap();
        let ComponentCommand::Push { max_size, .. } = parsed.command else {
            panic!("parsed as another command");
        };
        assert_eq!(
            max_size,
            sluice_http::app_state::ServeConfig::default().default_max_component_bytes
        );
    }
}
