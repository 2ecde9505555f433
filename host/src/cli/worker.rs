//! `sluice worker`: flags mapped onto the host's configuration (the claim loop, the
//! reaper beside it, the scheduler, retention, the metrics exporter: `Host::run` runs
//! them), and the exit summary.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use sluice_sandbox::{Contract, EgressConfig, Sandbox, SandboxConfig};
use sluice_store::{Store, WorkerKind};

use super::output::Printer;
use crate::host::{Host, HostConfig};
use sluice_shared::registration;
use sluice_shared::units::parse_duration;
use sluice_worker::services::reaper::ReaperConfig;
use sluice_worker::{IdlePolicy, Listen, Prefetch, ShutdownTimeouts, WorkerConfig};

#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    /// Attempts run at once.
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
    /// Attempts run beyond --concurrency, each only for a tenant with nothing executing
    /// on this worker: a tenant's job does not wait for another tenant's to end when
    /// they hold every slot (docs/fairness.md). 0: none.
    #[arg(long, default_value_t = 1)]
    pub spare_slots: usize,
    /// Threads that execute guest code (default: one per CPU, one fewer when
    /// DATABASE_URL names this machine, so busy guests leave PostgreSQL a CPU). Attempts
    /// beyond this many take turns on them, an epoch tick at a time (docs/fleet.md).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub guest_threads: Option<u16>,
    /// Lower this worker's CPU weight against other sessions' processes (Linux
    /// autogroup nice, 1–19), so that a PostgreSQL on the same machine is not kept
    /// waiting by busy guests. Needs the worker in its own session (`setsid sluice
    /// worker ...`); under systemd or Docker use their CPU weight instead (docs/fleet.md).
    #[arg(long, value_name = "NICE", value_parser = clap::value_parser!(u8).range(1..=19))]
    pub autogroup_nice: Option<u8>,
    /// Jobs claimed ahead of free slots and queued in this worker, so a slot refills
    /// without waiting for a claim. They hold leases like running jobs (heartbeated,
    /// released on shutdown, reaped if the worker dies). `auto`: sized from the
    /// completion rate and the claim round trip (none for long jobs, at most 1000);
    /// a number fixes it; 0: claim only for free slots.
    #[arg(long, default_value_t = Prefetch::Auto)]
    pub prefetch: Prefetch,
    /// With --prefetch, the lease on a job while it waits in this worker's queue (a job
    /// that starts gets --lease at the next heartbeat): if the worker dies, its queue
    /// comes back after this long, not after --lease.
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    pub prefetch_lease: Duration,
    /// Only run jobs of these tenants (repeatable; default: all).
    #[arg(long = "only-tenant")]
    pub only_tenants: Vec<String>,
    /// Exit 0 once nothing runnable remains (for scripts and batch use).
    #[arg(long)]
    pub drain: bool,
    /// With --drain, wait for retries and delayed jobs due within this long.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub drain_horizon: Duration,
    /// Lease (visibility timeout) on claimed jobs; renewed every third of it.
    #[arg(long, value_parser = parse_duration, default_value = "5m")]
    pub lease: Duration,
    /// Run the reaper of expired leases (of any worker) this often.
    #[arg(long, value_parser = parse_duration, default_value = "15s")]
    pub reap_interval: Duration,
    /// LISTEN on this direct connection instead of a pool connection: set it when
    /// DATABASE_URL points at a transaction pooler (which drops LISTEN).
    #[arg(long, env = "SLUICE_DIRECT_DATABASE_URL", hide_env_values = true)]
    pub direct_database_url: Option<String>,
    /// Do not LISTEN: poll for work with back-off (--idle-backoff doubling to --idle-backoff-max).
    #[arg(long, conflicts_with = "direct_database_url")]
    pub no_listen: bool,
    /// With LISTEN, look for work at least this often anyway (lost notifications).
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    pub poll_interval: Duration,
    /// Without LISTEN, the first wait after a look that found nothing; doubles each time.
    #[arg(long, value_parser = parse_duration, default_value = "2s")]
    pub idle_backoff: Duration,
    /// Without LISTEN, the longest wait between looks.
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    pub idle_backoff_max: Duration,
    /// On SIGTERM/SIGINT, let running jobs finish for this long before interrupting and
    /// releasing them.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub drain_timeout: Duration,
    /// On SIGTERM/SIGINT, exit within this long in any case (jobs not yet released are
    /// left to the reaper, and the exit code is 1).
    #[arg(long, value_parser = parse_duration, default_value = "15s")]
    pub shutdown_timeout: Duration,
    /// Worker name in leases, attempt history and the worker registry (default:
    /// host-pid). Refused while a live process holds it (`sluice workers list`).
    #[arg(long, env = "SLUICE_WORKER_ID")]
    pub worker_id: Option<String>,
    /// Where precompiled components are cached.
    #[arg(long, env = "SLUICE_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Scheduler and retention, run beside the claim loop.
    #[command(flatten)]
    pub background: super::background::BackgroundArgs,
    /// Trust the CA certificates in this PEM file for outbound HTTPS, beside the
    /// built-in web roots (for an internal CA).
    #[arg(long, env = "SLUICE_EGRESS_CA_FILE")]
    pub egress_ca_file: Option<PathBuf>,
    /// Run components of task contracts up to this one (`0.1` or `0.2`; default: the
    /// newest this build runs). Jobs of newer components stay pending for a host that
    /// runs them (rolling deploys, docs/fleet.md).
    #[arg(long, value_name = "VERSION")]
    pub max_contract: Option<Contract>,
    /// Serve Prometheus metrics at http://ADDR/metrics, e.g. `127.0.0.1:9090`.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<SocketAddr>,
}

pub async fn run(
    store: Store,
    global: &super::Global,
    printer: &Printer,
    args: WorkerArgs,
) -> anyhow::Result<()> {
    check_timings(&args)?;
    // Retention's session lock goes where LISTEN goes: past the transaction pooler.
    let store = match &args.direct_database_url {
        Some(url) => store.with_direct_url(url),
        None => store,
    };
    if let Some(nice) = args.autogroup_nice {
        let now = crate::autogroup::set_nice(nice)?;
        tracing::info!(autogroup = %now, "lowered this worker's CPU weight against other sessions");
    }
    let egress = egress_config(global, &args)?;
    let keyring = global.keyring()?;
    store.check_schema().await?;
    // Before anything slow: a SIGTERM during startup is a graceful shutdown too.
    let shutdown = crate::signals::shutdown_on_signal("finishing running jobs, then exiting");
    let worker_id = args
        .worker_id
        .clone()
        .unwrap_or_else(registration::default_worker_id);
    let sandbox = Sandbox::new(SandboxConfig {
        max_concurrency: args
            .concurrency
            .max(1)
            .checked_add(args.spare_slots)
            .and_then(|n| u32::try_from(n).ok())
            .context("--concurrency plus --spare-slots is too large: give fewer (each is a sandbox instance)")?,
        guest_threads: args.guest_threads.map_or_else(
            || sluice_worker::default_guest_threads(sluice_worker::cpus(), store.server_is_on_this_machine()),
            usize::from,
        ),
        cache_dir: Some(
            args.cache_dir
                .clone()
                .unwrap_or_else(registration::default_cache_dir),
        ),
        max_contract: args.max_contract.unwrap_or(Contract::NEWEST),
        egress,
        ..SandboxConfig::default()
    })
    .with_context(|| match &args.egress_ca_file {
        Some(path) => format!(
            "start the sandbox (is --egress-ca-file {} a PEM file of CA certificates?)",
            path.display()
        ),
        None => "start the sandbox".to_owned(),
    })?;
    tracing::info!(
        max_contract = %sandbox.config().max_contract,
        guest_threads = sandbox.config().guest_threads,
        "running components of task contracts up to this one"
    );
    let mut config = worker_config(&args, worker_id.clone());
    config.secrets = keyring;
    let tracer = crate::traces::from_env("sluice-worker")?;
    config.tracer = tracer.clone();
    config.metrics.watch_tracer(&tracer);

    let (scheduler, retention) = super::background::services(&args.background, &worker_id);
    let max_contract = sandbox.config().max_contract;
    let contracts: Vec<Contract> = Contract::ALL
        .into_iter()
        .filter(|c| *c <= max_contract)
        .collect();
    let host = HostConfig {
        register: registration::describe(
            &worker_id,
            WorkerKind::Worker,
            &contracts,
            Some(config.concurrency),
            config.lease,
        ),
        metrics: config.metrics.clone(),
        worker: Some((config, sandbox)),
        reaper: Some(reaper_config(&args)),
        scheduler,
        retention,
        metrics_listen: args.metrics_listen,
    };
    let summary = Host::run(store, host, shutdown).await;
    crate::traces::flush(&tracer).await;
    let summary = summary?.expect("a worker ran");
    printer.value(
        &summary,
        &[
            ("completed", summary.completed.to_string()),
            ("retrying", summary.retrying.to_string()),
            ("dead", summary.dead.to_string()),
            ("cancelled", summary.cancelled.to_string()),
            ("released", summary.released.to_string()),
            ("dropped", summary.dropped.to_string()),
        ],
    );
    if summary.abandoned > 0 {
        bail!(
            "the shutdown budget ran out with {} attempt(s) unrecorded; their jobs return to \
             pending when their lease expires (raise --shutdown-timeout?)",
            summary.abandoned
        );
    }
    Ok(())
}

/// Outbound HTTP's host settings: the opened networks (logged, since they widen what
/// every tenant can reach) and the extra CA file.
fn egress_config(global: &super::Global, args: &WorkerArgs) -> anyhow::Result<EgressConfig> {
    let networks = global.networks()?;
    if !networks.opened().is_empty() {
        let opened: Vec<String> = networks.opened().iter().map(|n| n.to_string()).collect();
        tracing::warn!(
            networks = %opened.join(", "),
            "outbound HTTP may reach these networks despite the deny list (--egress-allow-network)"
        );
    }
    let extra_root_certs_pem = match &args.egress_ca_file {
        None => Vec::new(),
        Some(path) => std::fs::read(path)
            .with_context(|| format!("--egress-ca-file {}: cannot read it", path.display()))?,
    };
    Ok(EgressConfig {
        networks,
        extra_root_certs_pem,
    })
}

/// The claim loop's configuration from the flags. Every flag's default is the config's
/// own (`WorkerConfig::new`, `IdlePolicy` and `ShutdownTimeouts` defaults): a unit test
/// holds the two together, so a default is changed in one place.
fn worker_config(args: &WorkerArgs, worker_id: String) -> WorkerConfig {
    let mut config = WorkerConfig::new(worker_id);
    config.concurrency = args.concurrency.max(1);
    config.spare_slots = args.spare_slots;
    config.prefetch = args.prefetch;
    config.prefetch_lease = args.prefetch_lease;
    config.tenants = (!args.only_tenants.is_empty()).then(|| args.only_tenants.clone());
    config.drain = args.drain;
    config.drain_horizon = args.drain_horizon;
    config.lease = args.lease;
    config.listen = match (args.no_listen, &args.direct_database_url) {
        (true, _) => Listen::Off,
        (false, Some(url)) => Listen::Direct(url.clone()),
        (false, None) => Listen::Pool,
    };
    config.idle = IdlePolicy {
        safety_poll: args.poll_interval,
        backoff_first: args.idle_backoff,
        backoff_max: args.idle_backoff_max,
    };
    config.shutdown = ShutdownTimeouts {
        drain: args.drain_timeout,
        budget: args.shutdown_timeout,
    };
    config
}

/// The reaper's configuration from the flags (its default interval is the config's).
fn reaper_config(args: &WorkerArgs) -> ReaperConfig {
    ReaperConfig {
        interval: args.reap_interval,
        ..ReaperConfig::default()
    }
}

/// Refuses timings the loop cannot honour, naming the flag.
fn check_timings(args: &WorkerArgs) -> anyhow::Result<()> {
    let positive = [
        ("--lease", args.lease),
        ("--prefetch-lease", args.prefetch_lease),
        ("--reap-interval", args.reap_interval),
        ("--poll-interval", args.poll_interval),
        ("--idle-backoff", args.idle_backoff),
        ("--idle-backoff-max", args.idle_backoff_max),
        ("--shutdown-timeout", args.shutdown_timeout),
    ];
    for (flag, value) in positive {
        if value.is_zero() {
            bail!("{flag} must be longer than zero");
        }
    }
    // Heartbeats renew leases every third of the shorter one in use.
    let leases = [
        ("--lease", args.lease, true),
        (
            "--prefetch-lease",
            args.prefetch_lease,
            args.prefetch.may_queue(),
        ),
    ];
    for (flag, lease, used) in leases {
        if used && lease < Duration::from_secs(1) {
            bail!(
                "{flag} {lease:?} is too short: heartbeats renew it every third, so it must be at least 1s"
            );
        }
    }
    if args.idle_backoff_max < args.idle_backoff {
        bail!(
            "--idle-backoff-max ({:?}) must not be shorter than --idle-backoff ({:?})",
            args.idle_backoff_max,
            args.idle_backoff
        );
    }
    if args.drain_timeout > args.shutdown_timeout {
        bail!(
            "--drain-timeout ({:?}) must not exceed --shutdown-timeout ({:?}): the drain is part of the shutdown budget",
            args.drain_timeout,
            args.shutdown_timeout
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    use clap::Parser;

    use super::*;

    #[derive(clap::Parser)]
    struct Worker {
        #[command(flatten)]
        args: WorkerArgs,
    }

    fn check(flags: &[&str]) -> Result<(), String> {
        let parsed = Worker::try_parse_from(std::iter::once("worker").chain(flags.iter().copied()))
            .expect("flags parse");
        check_timings(&parsed.args).map_err(|error| error.to_string())
    }

    #[test]
    fn flag_defaults_are_the_configs_defaults() {
        let parsed = Worker::try_parse_from(["worker"]).expect("no flags parse");
        let from_flags = worker_config(&parsed.args, "w".into());
        let defaults = WorkerConfig::new("w");
        assert_eq!(from_flags.concurrency, defaults.concurrency);
        assert_eq!(from_flags.spare_slots, defaults.spare_slots);
        assert_eq!(from_flags.prefetch, defaults.prefetch);
        assert_eq!(from_flags.prefetch_lease, defaults.prefetch_lease);
        assert_eq!(from_flags.tenants, defaults.tenants);
        assert_eq!(from_flags.drain, defaults.drain);
        assert_eq!(from_flags.drain_horizon, defaults.drain_horizon);
        assert_eq!(from_flags.lease, defaults.lease);
        assert_eq!(
            reaper_config(&parsed.args).interval,
            ReaperConfig::default().interval
        );
        assert!(matches!(from_flags.listen, Listen::Pool));
        assert!(matches!(defaults.listen, Listen::Pool));
        let (a, b) = (from_flags.idle, defaults.idle);
        assert_eq!(
            (a.safety_poll, a.backoff_first, a.backoff_max),
            (b.safety_poll, b.backoff_first, b.backoff_max)
        );
        let (a, b) = (from_flags.shutdown, defaults.shutdown);
        assert_eq!((a.drain, a.budget), (b.drain, b.budget));
    }

    #[test]
    fn prefetch_takes_auto_or_a_number_and_names_anything_else() {
        let parse = |value: &str| {
            Worker::try_parse_from(["worker", "--prefetch", value]).map(|w| w.args.prefetch)
        };
        assert_eq!(parse("auto").ok(), Some(Prefetch::Auto));
        assert_eq!(parse("0").ok(), Some(Prefetch::Fixed(0)));
        assert_eq!(parse("500").ok(), Some(Prefetch::Fixed(500)));
        let bad = parse("lots").unwrap_err().to_string();
        assert!(bad.contains("--prefetch") && bad.contains("auto"), "{bad}");
    }

    #[test]
    fn timing_flags_that_cannot_work_are_refused_by_name() {
        assert_eq!(check(&[]), Ok(()));
        assert_eq!(
            check(&["--prefetch", "64", "--prefetch-lease", "5s"]),
            Ok(())
        );
        let zero = check(&["--prefetch-lease", "0s"]).unwrap_err();
        assert!(zero.contains("--prefetch-lease"), "{zero}");
        let short = check(&["--prefetch", "8", "--prefetch-lease", "500ms"]).unwrap_err();
        assert!(
            short.contains("--prefetch-lease") && short.contains("at least 1s"),
            "{short}"
        );
        // `auto` (the default) may queue jobs: it needs a usable prefetch lease too.
        let auto = check(&["--prefetch-lease", "500ms"]).unwrap_err();
        assert!(auto.contains("--prefetch-lease"), "{auto}");
        // Without prefetch the prefetch lease is never used: a short one is harmless.
        assert_eq!(
            check(&["--prefetch", "0", "--prefetch-lease", "500ms"]),
            Ok(())
        );
        let lease = check(&["--lease", "500ms"]).unwrap_err();
        assert!(lease.starts_with("--lease"), "{lease}");
    }

    #[test]
    fn guest_threads_take_a_positive_count_and_name_anything_else() {
        let parse = |value: &str| {
            let flag = format!("--guest-threads={value}");
            Worker::try_parse_from(["worker", flag.as_str()]).map(|w| w.args.guest_threads)
        };
        assert_eq!(parse("1").unwrap(), Some(1));
        assert_eq!(
            Worker::try_parse_from(["worker"])
                .unwrap()
                .args
                .guest_threads,
            None
        );
        for bad in ["0", "-1", "two", "5000"] {
            let error = parse(bad).unwrap_err().to_string();
            assert!(error.contains("--guest-threads"), "{bad}: {error}");
        }
    }
}
