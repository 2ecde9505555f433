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
mod retention;
mod sandbox;
mod setup;
mod wait;

use std::path::PathBuf;

use anyhow::Context;
use clap::Subcommand;
use sluice_sandbox::{Sandbox, SandboxConfig};

use setup::{define_sample, define_sample_for, read_sample, set_type};
use sluice_store::{FlowChange, Store};

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
        /// Give the jobs concurrency keys, round-robin over this many (0: none).
        #[arg(long, default_value_t = 0)]
        keys: usize,
        /// The type's `--max-running-per-key` (flow control; none by default).
        #[arg(long, value_name = "N")]
        max_running_per_key: Option<u32>,
        /// The type's `--rate` (`N/PERIOD`; none by default).
        #[arg(long, value_name = "N/PERIOD", value_parser = sluice_store::Rate::parse)]
        rate: Option<sluice_store::Rate>,
        /// Drain the `echo` jobs already queued (by `bench enqueue`) instead of enqueuing
        /// `--jobs` of its own, and skip its ANALYZE: the drain alone, for
        /// `scripts/db-cpu`, which brackets each phase of a job's life.
        #[arg(long)]
        queued: bool,
    },
    /// One retention pass, as a worker's retention service runs it
    /// (`Store::prune_if_due` with the default policy and batch size).
    Retention {
        /// Keep completed jobs this long (default: the policy's; `0s` prunes every
        /// finished one).
        #[arg(long, value_parser = sluice_shared::units::parse_duration)]
        retain_completed: Option<std::time::Duration>,
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
    /// Wait latency: from a job's finish (its completion's commit) to the answer of a
    /// wait for it (`GET /v1/jobs/{id}?wait=`'s `FinishWaits`), one job at a time.
    Wait {
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
        /// Also this many concurrency keys of another type, each at its cap of one
        /// running job (`--max-running-per-key 1`), with `--held-jobs` pending behind
        /// them: the claim must pass them by.
        #[arg(long, default_value_t = 0)]
        held_keys: usize,
        /// Jobs of those keys (pending behind the running ones).
        #[arg(long, default_value_t = 0)]
        held_jobs: usize,
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
                    keys,
                    max_running_per_key,
                    rate,
                    queued,
                } => {
                    if queued && task != queue::DrainTask::Echo {
                        anyhow::bail!("--queued drains `echo` jobs: drop --task");
                    }
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
                    let flow = FlowChange {
                        max_running_per_key: max_running_per_key.map(Some),
                        rate: rate.map(Some),
                        ..FlowChange::default()
                    };
                    if flow != FlowChange::default() {
                        store.set_flow(BENCH_TENANT, task.job_type(), &flow).await?;
                    }
                    let drain = queue::Drain {
                        jobs,
                        concurrency,
                        prefetch,
                        task,
                        target,
                        keys,
                        queued,
                    };
                    let mut result = queue::drain(&store, sandbox, drain).await?;
                    result["durable"] = durable.into();
                    result["keys"] = keys.into();
                    result["max_running_per_key"] = max_running_per_key.into();
                    result["rate"] = rate.map(|r| r.to_string()).into();
                    if let Some(receiver) = &receiver {
                        result["requests"] = receiver.answered().into();
                    }
                    Ok(result)
                }
                BenchCommand::Batch { size, rounds } => queue::batch(&store, size, rounds).await,
                BenchCommand::Retention { retain_completed } => {
                    retention::prune_once(&store, retain_completed).await
                }
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
                BenchCommand::Wait { jobs } => wait::wait(&store, jobs).await,
                BenchCommand::Backlog {
                    ready,
                    scheduled,
                    rounds,
                    held_keys,
                    held_jobs,
                } => {
                    if held_keys > 0 {
                        define_sample(&store, &sandbox, latency::HELD_TYPE, &echo).await?;
                        latency::hold_keys(&store, held_keys, held_jobs).await?;
                    }
                    let mut result = latency::backlog(&store, ready, scheduled, rounds).await?;
                    result["held_keys"] = held_keys.into();
                    result["held_jobs"] = held_jobs.into();
                    Ok(result)
                }
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

/// The `p`th percentile (0..=100) of sorted samples.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}
