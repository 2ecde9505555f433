//! `sluice schedules create|list|show|pause|resume|delete`: cron schedules of one tenant.
//! Parsing and printing only; validation and firing live in the store. `--json` prints
//! `sluice_wire::ScheduleView`, what `/v1/schedules` answers.

use std::time::Duration;

use clap::Subcommand;
use sluice_store::{CatchUp, DEFAULT_MAX_CATCH_UP, NewSchedule, ScheduleRecord, Store};

use super::Global;
use super::enqueue::parse_priority;
use super::output::Printer;
use sluice_shared::units::parse_duration;
use sluice_wire::ScheduleView;

#[derive(Debug, Subcommand)]
pub enum SchedulesCommand {
    /// Create a schedule: one job of `--type` per slot of `--cron`.
    Create(CreateArgs),
    /// List the tenant's schedules.
    List,
    /// Show a schedule with its next slot and its fired and skipped counts.
    Show { name: String },
    /// Stop firing (slots that pass while paused are neither run nor counted).
    Pause { name: String },
    /// Fire again from the next slot after now.
    Resume { name: String },
    /// Delete a schedule (jobs it enqueued stay).
    Delete { name: String },
}

#[derive(Debug, clap::Args)]
pub struct CreateArgs {
    /// Unique per tenant.
    pub name: String,
    /// 5 fields (`*/5 * * * *`: minute hour day month weekday) or 6 with seconds first
    /// (`*/10 * * * * *`); `@hourly`, `@daily`, … too.
    #[arg(long)]
    pub cron: String,
    /// IANA time zone the expression is read in.
    #[arg(long, default_value = "UTC")]
    pub tz: String,
    /// The job type each slot enqueues.
    #[arg(long = "type")]
    pub job_type: String,
    /// Payload of every job (JSON by convention).
    #[arg(long, default_value = "{}")]
    pub payload: String,
    /// `low`, `medium`, `high`, `critical` or any integer (higher runs first).
    #[arg(long, value_parser = parse_priority, default_value = "medium")]
    pub priority: i32,
    /// Attempts per job (default: the job type's).
    #[arg(long)]
    pub max_attempts: Option<i32>,
    /// Spread each job over [slot, slot + jitter] (deterministic per slot).
    #[arg(long, value_parser = parse_duration, default_value = "0s")]
    pub jitter: Duration,
    /// Missed slots after downtime: `none` (skip them), `latest` (run the most recent
    /// once), `all` (run up to --max-catch-up of the most recent).
    #[arg(long, value_enum, default_value = "latest")]
    pub catch_up: CatchUpArg,
    /// With `--catch-up all`: at most this many missed slots run.
    #[arg(long, default_value_t = DEFAULT_MAX_CATCH_UP)]
    pub max_catch_up: u32,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum CatchUpArg {
    None,
    Latest,
    All,
}

impl From<CatchUpArg> for CatchUp {
    fn from(arg: CatchUpArg) -> Self {
        match arg {
            CatchUpArg::None => CatchUp::None,
            CatchUpArg::Latest => CatchUp::Latest,
            CatchUpArg::All => CatchUp::All,
        }
    }
}

pub async fn run(
    store: &Store,
    global: &Global,
    printer: &Printer,
    command: SchedulesCommand,
) -> anyhow::Result<()> {
    let tenant = global.tenant.as_str();
    match command {
        SchedulesCommand::Create(args) => {
            let schedule = store.create_schedule(&new_schedule(tenant, args)).await?;
            print_one(printer, schedule);
        }
        SchedulesCommand::List => {
            let schedules = store.list_schedules(Some(tenant)).await?;
            printer.table(
                schedules,
                &[
                    "name",
                    "cron",
                    "tz",
                    "type",
                    "state",
                    "next slot",
                    "fired",
                    "skipped",
                ],
                |s| {
                    vec![
                        s.name.clone(),
                        s.cron.clone(),
                        s.tz.clone(),
                        s.job_type.clone(),
                        state(s).into(),
                        time(s.next_slot),
                        s.fired_count.to_string(),
                        s.skipped_count.to_string(),
                    ]
                },
                ScheduleView::from,
            );
        }
        SchedulesCommand::Show { name } => {
            let schedule = store
                .get_schedule(tenant, &name)
                .await?
                .ok_or_else(|| not_found(&name, tenant))?;
            print_one(printer, schedule);
        }
        SchedulesCommand::Pause { name } => {
            let schedule = store.pause_schedule(tenant, &name).await?;
            print_one(printer, schedule);
        }
        SchedulesCommand::Resume { name } => {
            let schedule = store.resume_schedule(tenant, &name).await?;
            print_one(printer, schedule);
        }
        SchedulesCommand::Delete { name } => {
            store.delete_schedule(tenant, &name).await?;
            printer.message(&format!("schedule `{name}` deleted"));
        }
    }
    Ok(())
}

/// The schedule `sluice schedules create` asks for; a flag left out is
/// [`NewSchedule::new`]'s default (`flag_defaults_are_new_schedules_defaults`).
fn new_schedule(tenant: &str, args: CreateArgs) -> NewSchedule {
    NewSchedule {
        tz: args.tz,
        payload: args.payload.into_bytes(),
        priority: args.priority,
        max_attempts: args.max_attempts,
        jitter: args.jitter,
        catch_up: args.catch_up.into(),
        max_catch_up: args.max_catch_up,
        ..NewSchedule::new(tenant, args.name, args.cron, args.job_type)
    }
}

fn print_one(printer: &Printer, s: ScheduleRecord) {
    let fields = [
        ("schedule", s.name.clone()),
        ("cron", s.cron.clone()),
        ("tz", s.tz.clone()),
        ("type", s.job_type.clone()),
        ("payload", String::from_utf8_lossy(&s.payload).into_owned()),
        ("priority", s.priority.to_string()),
        (
            "max attempts",
            s.max_attempts
                .map_or_else(|| "job type's".into(), |n| n.to_string()),
        ),
        ("jitter", format!("{} ms", s.jitter_ms)),
        (
            "catch-up",
            match s.catch_up {
                CatchUp::All => format!("all (at most {})", s.max_catch_up),
                other => other.to_string(),
            },
        ),
        ("state", state(&s).into()),
        ("next slot", time(s.next_slot)),
        ("last fired slot", time(s.last_fired_slot)),
        ("fired", s.fired_count.to_string()),
        ("skipped (missed)", s.skipped_count.to_string()),
        ("last error", s.last_error.clone().unwrap_or_default()),
    ];
    printer.value(&ScheduleView::from(s), &fields);
}

fn state(s: &ScheduleRecord) -> &'static str {
    match (s.paused, s.next_slot) {
        (true, _) => "paused",
        (false, Some(_)) => "active",
        (false, None) => "finished",
    }
}

fn time(t: Option<chrono::DateTime<chrono::Utc>>) -> String {
    t.map_or_else(|| "-".into(), |t| t.to_rfc3339())
}

fn not_found(name: &str, tenant: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "schedule `{name}` not found for tenant `{tenant}`; `sluice schedules list` shows its schedules"
    )
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(clap::Parser)]
    struct Create {
        #[command(flatten)]
        args: CreateArgs,
    }

    #[test]
    fn flag_defaults_are_new_schedules_defaults() {
        let args = Create::try_parse_from(["create", "nightly", "--cron", "@daily", "--type", "t"])
            .unwrap()
            .args;
        assert_eq!(
            new_schedule("acme", args),
            NewSchedule::new("acme", "nightly", "@daily", "t")
        );
    }
}
