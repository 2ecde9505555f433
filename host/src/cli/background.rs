//! Flags and start-up of a host's background services (`sluice_worker::services`): the
//! scheduler and retention. Shared by `sluice worker` (flattened into its flags) and
//! `sluice scheduler` (which runs them without claiming jobs).

use std::time::Duration;

use sluice_store::{RetentionPolicy, Store};

use crate::host::{Host, HostConfig};
use sluice_shared::metrics::Metrics;
use sluice_shared::units::parse_duration;
use sluice_worker::services::retention::RetentionConfig;
use sluice_worker::services::scheduler::SchedulerConfig;

/// Every default is the service's own (`SchedulerConfig`, `RetentionConfig`,
/// `RetentionPolicy`): `flag_defaults_are_the_services_defaults` holds them together, so
/// a default is changed in the library and here.
#[derive(Clone, Debug, clap::Args)]
pub struct BackgroundArgs {
    /// Do not fire cron schedules from this host.
    #[arg(long)]
    pub no_scheduler: bool,
    /// Look for due schedules at least this often (sooner when a slot is due sooner).
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub scheduler_interval: Duration,
    /// Do not prune finished jobs from this host.
    #[arg(long)]
    pub no_retention: bool,
    /// Prune finished jobs once per this interval, fleet-wide.
    #[arg(long, value_parser = parse_duration, default_value = "1h")]
    pub retention_interval: Duration,
    /// Keep completed jobs this long after they finish.
    #[arg(long, value_parser = parse_duration, default_value = "3days")]
    pub retain_completed: Duration,
    /// Keep dead and cancelled jobs this long after they finish.
    #[arg(long, value_parser = parse_duration, default_value = "30days")]
    pub retain_dead: Duration,
    /// Rows deleted per retention statement (1 to 100000).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub retention_batch: u32,
}

/// The scheduler and retention configurations `args` asks for (`None`: disabled).
pub fn services(
    args: &BackgroundArgs,
    host: &str,
) -> (Option<SchedulerConfig>, Option<RetentionConfig>) {
    let scheduler = (!args.no_scheduler).then(|| SchedulerConfig {
        idle_interval: args.scheduler_interval,
        ..SchedulerConfig::default()
    });
    let retention = (!args.no_retention).then(|| {
        let mut config = RetentionConfig::new(host);
        config.interval = args.retention_interval;
        config.policy = RetentionPolicy {
            completed: args.retain_completed,
            dead: args.retain_dead,
            batch_size: args.retention_batch,
        };
        config
    });
    (scheduler, retention)
}

/// `sluice scheduler`: the background duties alone, without claiming jobs.
#[derive(Debug, clap::Args)]
pub struct SchedulerArgs {
    #[command(flatten)]
    pub background: BackgroundArgs,
    /// Its id in the worker registry, also recorded by retention runs (default:
    /// host-pid). Refused while a live process holds it (`sluice workers list`).
    #[arg(long, env = "SLUICE_WORKER_ID")]
    pub worker_id: Option<String>,
    /// How long this process may go without a heartbeat before the registry shows it
    /// lost (and its id may be used again); it heartbeats every third of it.
    #[arg(long, value_parser = parse_duration, default_value = "1m")]
    pub lease: Duration,
}

/// Runs the scheduler (and retention, unless disabled) until SIGTERM or SIGINT.
pub async fn run_standalone(store: Store, args: SchedulerArgs) -> anyhow::Result<()> {
    let shutdown = crate::signals::shutdown_on_signal("stopping the scheduler and retention");
    store.check_schema().await?;
    let host = args
        .worker_id
        .unwrap_or_else(sluice_shared::registration::default_worker_id);
    if args.lease < Duration::from_secs(1) {
        anyhow::bail!(
            "--lease {:?} is too short: the scheduler heartbeats every third of it, so it must be at least 1s",
            args.lease
        );
    }
    let (scheduler, retention) = services(&args.background, &host);
    let config = HostConfig {
        register: sluice_shared::registration::describe(
            &host,
            sluice_store::WorkerKind::Scheduler,
            &[],
            None,
            args.lease,
        ),
        worker: None,
        reaper: None,
        scheduler,
        retention,
        metrics_listen: None,
        metrics: Metrics::default(),
    };
    Host::run(store, config, shutdown).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(clap::Parser)]
    struct Background {
        #[command(flatten)]
        args: BackgroundArgs,
    }

    fn parse(flags: &[&str]) -> Result<BackgroundArgs, String> {
        Background::try_parse_from(std::iter::once("sluice").chain(flags.iter().copied()))
            .map(|parsed| parsed.args)
            .map_err(|error| error.to_string())
    }

    #[test]
    fn flag_defaults_are_the_services_defaults() {
        let (scheduler, retention) = services(&parse(&[]).unwrap(), "h1");
        let scheduler = scheduler.expect("the scheduler runs by default");
        let defaults = SchedulerConfig::default();
        assert_eq!(scheduler.idle_interval, defaults.idle_interval);
        assert_eq!(scheduler.batch, defaults.batch);
        assert_eq!(scheduler.retry_delay, defaults.retry_delay);
        let retention = retention.expect("retention runs by default");
        let defaults = RetentionConfig::new("h1");
        assert_eq!(retention.interval, defaults.interval);
        assert_eq!(retention.policy, defaults.policy);
        assert_eq!(retention.host, "h1");
    }

    #[test]
    fn each_flag_reaches_its_service_and_the_no_flags_turn_them_off() {
        let args = parse(&[
            "--scheduler-interval",
            "3s",
            "--retention-interval",
            "10m",
            "--retain-completed",
            "1h",
            "--retain-dead",
            "2days",
            "--retention-batch",
            "50",
        ])
        .unwrap();
        let (scheduler, retention) = services(&args, "h1");
        assert_eq!(scheduler.unwrap().idle_interval, Duration::from_secs(3));
        let retention = retention.unwrap();
        assert_eq!(retention.interval, Duration::from_secs(600));
        assert_eq!(
            retention.policy,
            RetentionPolicy {
                completed: Duration::from_secs(3600),
                dead: Duration::from_secs(2 * 24 * 3600),
                batch_size: 50,
            }
        );
        let (scheduler, retention) =
            services(&parse(&["--no-scheduler", "--no-retention"]).unwrap(), "h1");
        assert!(scheduler.is_none() && retention.is_none());
        for bad in ["0", "100001"] {
            let error = parse(&["--retention-batch", bad]).unwrap_err();
            assert!(error.contains("--retention-batch"), "{bad}: {error}");
        }
    }
}
