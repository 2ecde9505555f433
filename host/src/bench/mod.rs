//! `sluice bench`: measurements that use the same code paths as `sluice enqueue` and
//! `sluice worker` (no bench-only shortcuts). Progress goes to stderr; each subcommand
//! prints one JSON object as the last line of stdout.
//!
//! Owns timing and reporting only; queue behaviour belongs to the store and worker.

mod fairness;
mod latency;
mod memory;
mod queue;
mod receiver;
mod replay;
mod resume;
mod sandbox;

use std::path::PathBuf;

use anyhow::Context;
use clap::Subcommand;
use sluice_sandbox::{Sandbox, SandboxConfig};
use sluice_store::{JobTypeSpec, NewComponent, Store};

use sluice_worker::Prefetch;

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Bulk enqueue throughput.
    Enqueue {
        #[arg(long, default_value_t = 100_000)]
        jobs: usize,
        #[arg(long, default_value_t = 5_000)]
        batch: usize,
    },
    /// Worker drain throughput on `echo` jobs (enqueue untimed, then time the worker).
    Drain {
        #[arg(long, default_value_t = 20_000)]
        jobs: usize,
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
        /// Jobs claimed ahead of free slots (`sluice worker --prefetch`: `auto`, the
        /// worker's default, or a number; 0: none).
        #[arg(long, default_value_t = Prefetch::Auto)]
        prefetch: Prefetch,
        /// The sample every job runs: `echo` completes, `fatal` fails permanently (each
        /// job is dead after one attempt: the failure path, batched like completions),
        /// `fan-out` enqueues one follow-up job and completes (children due in an hour).
        #[arg(long, value_enum, default_value_t = queue::DrainTask::Echo)]
        task: queue::DrainTask,
        /// Grant the job type outbound HTTP to this destination (repeatable): every
        /// attempt then carries a grant, though `echo` and `fatal` make no request.
        #[arg(long = "allow-http", value_name = "URL")]
        allow_http: Vec<String>,
        /// Make the job type durable (`sluice types set T --durable`): with `--task
        /// steps` each job journals its request before it leaves and its response.
        #[arg(long)]
        durable: bool,
    },
    /// What a journaled call costs a durable job's next attempt: `durable-steps` with
    /// `--calls` requests to a local receiver, timed live and replayed (no database).
    Replay {
        #[arg(long, default_value_t = 20)]
        calls: usize,
        #[arg(long, default_value_t = 200)]
        iterations: usize,
    },
    /// Pickup latency from an idle worker: jobs enqueued one by one at a fixed rate.
    Latency {
        #[arg(long, default_value_t = 500)]
        jobs: usize,
        #[arg(long, default_value_t = 50.0)]
        rate: f64,
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
    },
    /// Resume latency of a durable wait: from a signal's commit to the awaiting guest
    /// continuing (`await-signal` jobs of a durable type, one at a time).
    Resume {
        #[arg(long, default_value_t = 200)]
        jobs: usize,
    },
    /// Claim latency (1 and 100 jobs) with a deep table of ready and future jobs.
    Backlog {
        #[arg(long, default_value_t = 1_000_000)]
        ready: usize,
        #[arg(long, default_value_t = 100_000)]
        scheduled: usize,
        #[arg(long, default_value_t = 200)]
        rounds: usize,
    },
    /// Claim + complete of one batch, in two statements.
    Batch {
        #[arg(long, default_value_t = 100)]
        size: usize,
        #[arg(long, default_value_t = 50)]
        rounds: usize,
    },
    /// Sandbox instantiate + call of `echo`, one attempt at a time.
    Sandbox {
        #[arg(long, default_value_t = 10_000)]
        iterations: usize,
    },
    /// Peak RSS of a worker draining jobs of many components at a high concurrency.
    Memory {
        #[arg(long, default_value_t = 50)]
        components: usize,
        #[arg(long, default_value_t = 20_000)]
        jobs: usize,
        #[arg(long, default_value_t = 64)]
        concurrency: usize,
        #[arg(long, default_value_t = Prefetch::Fixed(64))]
        prefetch: Prefetch,
    },
    /// A light tenant's start latency alone and beside another tenant's flood of `sleep`
    /// jobs (light jobs run `clock`; latency = when its guest began minus creation).
    Fairness {
        /// Jobs the flood tenant queues.
        #[arg(long, default_value_t = 3_000)]
        flood: usize,
        /// Milliseconds each flood job runs.
        #[arg(long, default_value_t = 30)]
        flood_ms: u64,
        /// Light jobs per phase (alone, then beside the flood).
        #[arg(long, default_value_t = 50)]
        light: usize,
        /// One light job every this many milliseconds.
        #[arg(long, default_value_t = 200)]
        every_ms: u64,
        #[arg(long, default_value_t = 8)]
        concurrency: usize,
        /// As `sluice worker --prefetch` (`auto` by default; 0: none).
        #[arg(long, default_value_t = Prefetch::Auto)]
        prefetch: Prefetch,
        /// In-process workers (each with `--concurrency` slots, one shared sandbox).
        #[arg(long, default_value_t = 1)]
        workers: usize,
        /// As `sluice worker --spare-slots` (1 by default; 0: none).
        #[arg(long, default_value_t = 1)]
        spare_slots: usize,
    },
    /// Host start: prepare N precompiled components from the disk cache.
    Startup {
        #[arg(long, default_value_t = 50)]
        components: usize,
    },
}

/// Where the benchmarks find their sample components.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: BenchCommand,
    /// Directory of built sample components.
    #[arg(
        long,
        default_value = "sample-tasks/target/wasm32-wasip2/release",
        global = true
    )]
    pub samples: PathBuf,
    /// The sandbox's epoch tick (timeout granularity, and the slice after which a busy
    /// guest yields its thread to the next), e.g. `10ms`; default: the sandbox's.
    #[arg(long, value_parser = sluice_shared::units::parse_duration, global = true)]
    pub epoch_tick: Option<std::time::Duration>,
    /// The sandbox's guest threads, as `sluice worker --guest-threads` (default: CPUs, less
    /// one beside a local database).
    #[arg(long, global = true, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub guest_threads: Option<u16>,
    /// As `sluice worker --autogroup-nice`: the whole bench process (its workers and
    /// its enqueuers) at this autogroup nice; run it under `setsid`.
    #[arg(long, global = true, value_name = "NICE", value_parser = clap::value_parser!(u8).range(1..=19))]
    pub autogroup_nice: Option<u8>,
}

pub const BENCH_TENANT: &str = "bench";

pub async fn run(store: Option<Store>, args: BenchArgs) -> anyhow::Result<serde_json::Value> {
    if let Some(nice) = args.autogroup_nice {
        let now = crate::autogroup::set_nice(nice)?;
        eprintln!("autogroup: {now}");
    }
    let echo = read_sample(&args.samples, "echo.wasm")?;
    match args.command {
        BenchCommand::Sandbox { iterations } => {
            sandbox::instantiate_and_call(&echo, iterations).await
        }
        BenchCommand::Startup { components } => sandbox::startup(&echo, components).await,
        BenchCommand::Replay { calls, iterations } => {
            let steps = read_sample(&args.samples, "durable_steps.wasm")?;
            replay::replay(&steps, calls, iterations).await
        }
        command => {
            let store = store.context("this benchmark needs DATABASE_URL")?;
            store.migrate().await.context("apply migrations")?;
            store.create_tenant(BENCH_TENANT).await?;
            let defaults = SandboxConfig::default();
            let epoch_tick = args.epoch_tick.unwrap_or(defaults.epoch_tick);
            // As `sluice worker`: one guest thread fewer than CPUs beside a local database.
            let guest_threads = args.guest_threads.map_or_else(
                || {
                    sluice_worker::default_guest_threads(
                        sluice_worker::cpus(),
                        store.server_is_on_this_machine(),
                    )
                },
                usize::from,
            );
            // `drain --task steps` posts to a receiver on 127.0.0.1: open loopback, as
            // `sluice worker --egress-allow-network 127.0.0.1/32` would.
            let receiver = match &command {
                BenchCommand::Drain {
                    task: queue::DrainTask::Steps,
                    ..
                } => Some(receiver::Receiver::start()?),
                _ => None,
            };
            let mut egress = defaults.egress.clone();
            if receiver.is_some() {
                egress.networks =
                    sluice_egress::NetworkPolicy::parse(["127.0.0.1/32"]).context("loopback")?;
            }
            let sandbox = Sandbox::new(SandboxConfig {
                epoch_tick,
                guest_threads,
                egress,
                ..defaults
            })?;
            define_sample(&store, &sandbox, "echo", &echo).await?;
            match command {
                BenchCommand::Enqueue { jobs, batch } => queue::enqueue(&store, jobs, batch).await,
                BenchCommand::Drain {
                    jobs,
                    concurrency,
                    prefetch,
                    task,
                    mut allow_http,
                    durable,
                } => {
                    if task == queue::DrainTask::Steps {
                        let steps = read_sample(&args.samples, "durable_steps.wasm")?;
                        define_sample(&store, &sandbox, task.job_type(), &steps).await?;
                    }
                    let target = receiver.as_ref().map(|r| r.origin.clone());
                    allow_http.extend(target.clone());
                    if task == queue::DrainTask::Fatal {
                        let fatal = read_sample(&args.samples, "fatal.wasm")?;
                        define_sample(&store, &sandbox, task.job_type(), &fatal).await?;
                    }
                    if task == queue::DrainTask::FanOut {
                        let fan_out = read_sample(&args.samples, "fan_out.wasm")?;
                        define_sample(&store, &sandbox, task.job_type(), &fan_out).await?;
                        define_sample(&store, &sandbox, queue::FAN_OUT_CHILD, &echo).await?;
                    }
                    if !allow_http.is_empty() || durable {
                        set_type(&store, task.job_type(), &allow_http, durable).await?;
                    }
                    let drain = queue::Drain {
                        jobs,
                        concurrency,
                        prefetch,
                        task,
                        target,
                    };
                    let mut result = queue::drain(&store, sandbox, drain).await?;
                    result["durable"] = durable.into();
                    if let Some(receiver) = &receiver {
                        result["requests"] = receiver.answered().into();
                    }
                    Ok(result)
                }
                BenchCommand::Batch { size, rounds } => queue::batch(&store, size, rounds).await,
                BenchCommand::Latency {
                    jobs,
                    rate,
                    concurrency,
                } => {
                    let clock = read_sample(&args.samples, "clock.wasm")?;
                    define_sample(&store, &sandbox, latency::CLOCK_TYPE, &clock).await?;
                    latency::latency(&store, sandbox, jobs, rate, concurrency).await
                }
                BenchCommand::Resume { jobs } => {
                    let awaits = read_sample(&args.samples, "await_signal.wasm")?;
                    define_sample(&store, &sandbox, resume::RESUME_TYPE, &awaits).await?;
                    set_type(&store, resume::RESUME_TYPE, &[], true).await?;
                    resume::resume(&store, sandbox, jobs).await
                }
                BenchCommand::Backlog {
                    ready,
                    scheduled,
                    rounds,
                } => latency::backlog(&store, ready, scheduled, rounds).await,
                BenchCommand::Memory {
                    components,
                    jobs,
                    concurrency,
                    prefetch,
                } => memory::memory(&store, &echo, components, jobs, concurrency, prefetch).await,
                BenchCommand::Fairness {
                    flood,
                    flood_ms,
                    light,
                    every_ms,
                    concurrency,
                    prefetch,
                    workers,
                    spare_slots,
                } => {
                    let sleep = read_sample(&args.samples, "sleep.wasm")?;
                    store.create_tenant(fairness::LIGHT_TENANT).await?;
                    let slots = (workers * (concurrency + spare_slots)).max(1) as u32;
                    let sandbox = Sandbox::new(SandboxConfig {
                        max_concurrency: slots,
                        epoch_tick,
                        guest_threads,
                        ..Default::default()
                    })?;
                    let clock = read_sample(&args.samples, "clock.wasm")?;
                    define_sample_for(&store, &sandbox, BENCH_TENANT, fairness::SLEEP_TYPE, &sleep)
                        .await?;
                    define_sample_for(
                        &store,
                        &sandbox,
                        fairness::LIGHT_TENANT,
                        fairness::CLOCK_TYPE,
                        &clock,
                    )
                    .await?;
                    let f = fairness::Fairness {
                        flood,
                        flood_ms,
                        light,
                        every_ms,
                        concurrency,
                        prefetch,
                        workers,
                        spare_slots,
                    };
                    fairness::fairness(&store, sandbox, f).await
                }
                BenchCommand::Sandbox { .. }
                | BenchCommand::Startup { .. }
                | BenchCommand::Replay { .. } => {
                    unreachable!("handled above")
                }
            }
        }
    }
}

fn read_sample(dir: &std::path::Path, file: &str) -> anyhow::Result<Vec<u8>> {
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
async fn define_sample(
    store: &Store,
    sandbox: &Sandbox,
    name: &str,
    bytes: &[u8],
) -> anyhow::Result<()> {
    define_sample_for(store, sandbox, BENCH_TENANT, name, bytes).await
}

/// Gives a defined job type of the bench tenant an outbound HTTP allow list (none when
/// empty), durable or not.
async fn set_type(
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
async fn define_sample_for(
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

/// The `p`th percentile (0..=100) of sorted samples.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}
