//! `sluice component push`: read, hash, validate and precompile a component, then store it,
//! with a progress line per stage on a terminal (interpreter components are 10–40 MB and
//! take seconds to compile).
//!
//! The compile happens here, once, into this host's component cache (the directory
//! `sluice worker` reads, `--cache-dir` / `SLUICE_CACHE_DIR`): a worker on the same host
//! then loads the artifact in milliseconds instead of compiling while a job waits. Workers
//! on other hosts compile on first use, before the job's timeout starts. Validation and
//! compilation are the sandbox's; storage is the store's.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sluice_sandbox::{Origin, Sandbox, SandboxConfig, ValidationError, sha256_hex};
use sluice_store::{NewComponent, Store};

use super::Global;
use super::output::Printer;
use sluice_shared::units::format_size;
use sluice_wire::PushedComponent;

pub struct PushArgs {
    pub file: PathBuf,
    pub name: Option<String>,
    pub version: Option<String>,
    pub max_size: u64,
    pub cache_dir: PathBuf,
}

pub async fn push(
    store: &Store,
    global: &Global,
    printer: &Printer,
    args: PushArgs,
) -> anyhow::Result<()> {
    let name = match args.name {
        Some(name) => name,
        None => args
            .file
            .file_stem()
            .and_then(|s| s.to_str())
            .map(|s| s.replace('_', "-"))
            .context("cannot derive a component name from the file name; pass --name")?,
    };
    let invalid = || {
        format!(
            "{} is not a valid Sluice task component",
            args.file.display()
        )
    };
    let progress = Progress::new(printer.is_json());
    // The tenant's own cap, when it has one, wins over --max-size.
    let max_size = match store.get_tenant(&global.tenant).await? {
        Some(tenant) => tenant
            .limits
            .component_limit(args.max_size)
            .min(args.max_size),
        None => args.max_size,
    };

    let bytes = read_with_progress(&args.file, max_size, &progress)?;
    progress.stage("hashing");
    let sha256 = sha256_hex(&bytes);

    progress.stage("validating and precompiling (seconds for interpreter components)");
    let sandbox = Sandbox::new(SandboxConfig {
        cache_dir: Some(args.cache_dir.clone()),
        ..SandboxConfig::default()
    })
    .context("start the sandbox")?;
    let started = Instant::now();
    let (task, bytes) = tokio::task::spawn_blocking({
        let sha256 = sha256.clone();
        move || (sandbox.prepare(&sha256, &bytes), bytes)
    })
    .await
    .context("the compile task panicked")?;
    let task = task.with_context(invalid)?;
    let prepare_time = started.elapsed();

    progress.stage("storing in PostgreSQL");
    let record = store
        .put_component(&NewComponent {
            tenant: global.tenant.clone(),
            name,
            version: args.version,
            bytes,
            contract: task.contract().minor(),
        })
        .await?;
    progress.finish();

    let prepared_from = match task.origin() {
        Origin::Compiled => "compiled",
        Origin::DiskCache => "disk_cache",
    };
    let prepared = format!(
        "{} in {} (cached in {})",
        if prepared_from == "compiled" {
            "compiled"
        } else {
            "loaded from the cache"
        },
        format_seconds(prepare_time),
        args.cache_dir.display()
    );
    let fields = [
        ("component", format!("{}@{}", record.name, record.version)),
        ("id", record.id.to_string()),
        ("sha256", record.sha256.clone()),
        ("size", format_size(record.size as u64)),
        ("precompiled", prepared),
    ];
    let pushed = PushedComponent {
        component: record.into(),
        prepare_seconds: prepare_time.as_secs_f64(),
        prepared_from,
        cache_dir: args.cache_dir.display().to_string(),
    };
    printer.value(&pushed, &fields);
    Ok(())
}

fn format_seconds(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

/// Reads the file in 1 MiB chunks with a byte bar; refuses a file over `max_size` before
/// reading it (with the sandbox's own message).
fn read_with_progress(file: &Path, max_size: u64, progress: &Progress) -> anyhow::Result<Vec<u8>> {
    let mut reader =
        std::fs::File::open(file).with_context(|| format!("read {}", file.display()))?;
    let size = reader
        .metadata()
        .with_context(|| format!("read {}", file.display()))?
        .len();
    if size > max_size {
        return Err(ValidationError::TooLarge {
            size,
            limit: max_size,
        })
        .with_context(|| format!("{} is not a valid Sluice task component", file.display()));
    }
    let bar = progress.bytes(size, "reading");
    let mut bytes = Vec::with_capacity(size as usize);
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        let n = reader
            .read(&mut chunk)
            .with_context(|| format!("read {}", file.display()))?;
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&chunk[..n]);
        bar.inc(n as u64);
    }
    bar.finish_and_clear();
    Ok(bytes)
}

/// One progress line on stderr: a byte bar while reading, then a spinner naming the stage
/// and its elapsed time. Hidden with `--json` and when stderr is not a terminal.
struct Progress {
    spinner: ProgressBar,
    hidden: bool,
}

impl Progress {
    fn new(json: bool) -> Self {
        let spinner = if json {
            ProgressBar::hidden()
        } else {
            ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
        };
        spinner.set_style(
            ProgressStyle::with_template("{spinner} {msg} [{elapsed}]").expect("valid template"),
        );
        Self {
            spinner,
            hidden: json,
        }
    }

    fn bytes(&self, total: u64, what: &str) -> ProgressBar {
        let bar = if self.hidden {
            ProgressBar::hidden()
        } else {
            ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
        };
        bar.set_style(
            ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_message(what.to_owned());
        bar
    }

    fn stage(&self, what: &str) {
        self.spinner.set_message(what.to_owned());
        self.spinner.reset_elapsed();
        self.spinner.enable_steady_tick(Duration::from_millis(120));
    }

    fn finish(&self) {
        self.spinner.finish_and_clear();
    }
}
