//! `sluice run COMPONENT.wasm`: one attempt of a task on a payload, locally, with no
//! database: the component is validated and compiled by the sandbox, run once under the
//! same limit flags as `sluice types set`, with the outbound HTTP the flags allow (inside
//! the operator's `--egress-allow-network`), the secrets given on the command line, and
//! follow-up jobs accepted and printed, never enqueued. Durable replay is off: nothing is
//! journaled. The report and the exit code are `run_report`'s.
//!
//! Owns: the verb's flags and turning them into the sandbox's `Limits` and `Grants`. Must
//! not: open the database (no `Store` here, `DATABASE_URL` is not read), touch wasmtime
//! (the sandbox's API only), or write a second parser for limits or allow lists
//! (`attempt_flags`, `sluice_shared::grants`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context;
use sluice_egress::NetworkPolicy;
use sluice_sandbox::{
    CheckFuture, Contract, EgressConfig, FollowUp, FollowUpCheck, FollowUpGrant, Grants, JobInput,
    Limits, ReserveFuture, Sandbox, SandboxConfig, SecretGrant, TaskComponent, sha256_hex,
};

use super::attempt_flags::{HttpFlags, LimitFlags};
use super::output::Printer;
use super::{Global, read_file, run_report};

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The `.wasm` component file (as `sluice component push` takes it).
    pub component: PathBuf,
    /// Payload text (JSON by convention; default `{}`).
    #[arg(long, conflicts_with = "payload_file")]
    pub payload: Option<String>,
    /// Read the payload from a file.
    #[arg(long)]
    pub payload_file: Option<PathBuf>,
    #[command(flatten)]
    pub limits: LimitFlags,
    #[command(flatten)]
    pub http: HttpFlags,
    /// Let the task read secret NAME, whose value is VALUE (repeatable; wins over
    /// `--secrets-file`). `--secret NAME` alone grants a name that is not set (the task
    /// gets `not-found`). The value shows in `ps`: prefer `--secrets-file`.
    #[arg(long = "secret", value_name = "NAME=VALUE")]
    pub secrets: Vec<String>,
    /// A JSON object of secrets, name to value (`{"API_TOKEN": "…"}`), all granted.
    #[arg(long, value_name = "FILE")]
    pub secrets_file: Option<PathBuf>,
    /// The job type the task is told it runs as (default: the file name without `.wasm`).
    #[arg(long)]
    pub job_type: Option<String>,
    /// The attempt number the task sees (tasks that retry differently per attempt).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub attempt: u32,
    /// The attempt budget the task sees.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_attempts: u32,
    /// This host's cache of precompiled components (the one `sluice worker` and
    /// `component push` use): a second run loads the component instead of compiling it.
    #[arg(long, env = "SLUICE_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
}

/// Input `sluice run` cannot use: an unreadable or invalid component or payload, a
/// malformed allow-list entry or secret. Exits 2, as clap's usage errors do.
#[derive(Debug)]
pub struct BadInput(anyhow::Error);

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#}", self.0)
    }
}

impl std::error::Error for BadInput {}

/// `Err(BadInput)` from any error.
pub(super) fn bad<T>(result: anyhow::Result<T>) -> anyhow::Result<T> {
    result.map_err(|e| BadInput(e).into())
}

pub async fn run(global: &Global, printer: &Printer, args: RunArgs) -> anyhow::Result<ExitCode> {
    let payload = bad(match (&args.payload, &args.payload_file) {
        (Some(text), _) => Ok(text.clone().into_bytes()),
        (None, Some(path)) => read_file(path),
        (None, None) => Ok(b"{}".to_vec()),
    })?;
    let bytes = bad(read_file(&args.component))?;
    let networks = bad(global.networks())?;
    let http = bad(sluice_shared::grants::local_grant(
        &args.http.clone().spec(),
        "--allow-http",
        &networks,
    )
    .map_err(anyhow::Error::from))?;
    let secrets = bad(secret_grant(&args.secrets, args.secrets_file.as_ref()))?;
    let limits = args.limits.over(Limits::default());
    let job_type = match &args.job_type {
        Some(name) => name.clone(),
        None => args
            .component
            .file_stem()
            .and_then(|s| s.to_str())
            .map_or_else(|| "task".to_owned(), |s| s.replace('_', "-")),
    };

    let (sandbox, component) =
        local_sandbox(&args.component, bytes, args.cache_dir, networks).await?;

    let grants = Grants {
        http,
        follow_ups: follow_ups(&component),
        secrets,
        durable: None,
    };
    let job = JobInput {
        id: 1,
        job_type,
        tenant: "default".to_owned(),
        attempt: args.attempt,
        max_attempts: args.max_attempts.max(args.attempt),
        payload,
        trace: None,
    };
    let cancel = crate::signals::shutdown_on_signal("cancelling the attempt");
    let report = sandbox
        .run_with(&component, job, &limits, grants, cancel)
        .await;
    Ok(run_report::print(printer, &report))
}

/// A sandbox for one local attempt at a time, and the component of `path` (its `bytes`)
/// validated and compiled into the cache (`None`: the default one), or loaded from it.
/// An invalid component is [`BadInput`].
pub(super) async fn local_sandbox(
    path: &Path,
    bytes: Vec<u8>,
    cache_dir: Option<PathBuf>,
    networks: NetworkPolicy,
) -> anyhow::Result<(Sandbox, TaskComponent)> {
    let sandbox = Sandbox::new(SandboxConfig {
        max_concurrency: 1,
        guest_threads: 1,
        cache_dir: Some(cache_dir.unwrap_or_else(sluice_shared::registration::default_cache_dir)),
        egress: EgressConfig {
            networks,
            ..EgressConfig::default()
        },
        ..SandboxConfig::default()
    })
    .context("start the sandbox")?;
    let component = tokio::task::spawn_blocking({
        let sandbox = sandbox.clone();
        move || sandbox.prepare(&sha256_hex(&bytes), &bytes)
    })
    .await
    .context("the compile task panicked")?;
    let component = bad(component
        .with_context(|| format!("{} is not a valid Sluice task component", path.display())))?;
    Ok((sandbox, component))
}

/// Follow-ups accepted as they come (no job type to check them against), up to the
/// worker's default caps; the report lists them. Only 0.2 components can import
/// `sluice:task/jobs` (as the worker grants it).
pub(super) fn follow_ups(component: &TaskComponent) -> Option<Arc<FollowUpGrant>> {
    (component.contract() >= Contract::V0_2).then(accept_all)
}

fn accept_all() -> Arc<FollowUpGrant> {
    Arc::new(FollowUpGrant {
        max_count: sluice_worker::DEFAULT_MAX_FOLLOW_UPS,
        max_bytes: sluice_worker::DEFAULT_MAX_FOLLOW_UP_BYTES,
        check: Arc::new(AcceptAll::default()),
    })
}

/// The check of a local run's follow-ups: every one is accepted, and 0.3's are numbered
/// from 1 (nothing is enqueued, so the ids name no job).
#[derive(Default)]
struct AcceptAll(AtomicU64);

impl FollowUpCheck for AcceptAll {
    fn check<'a>(&'a self, _: &'a FollowUp) -> CheckFuture<'a> {
        Box::pin(async { Ok(()) })
    }

    fn reserve_id(&self) -> ReserveFuture<'_> {
        let id = self.0.fetch_add(1, Ordering::Relaxed) + 1;
        Box::pin(async move { Ok(id) })
    }
}

/// The secrets of `--secrets-file` then `--secret` (which wins), each name checked as
/// `sluice secrets set` checks it; `None` when none is given.
pub(super) fn secret_grant(
    flags: &[String],
    file: Option<&PathBuf>,
) -> anyhow::Result<Option<Arc<SecretGrant>>> {
    let mut secrets: BTreeMap<String, Option<String>> = BTreeMap::new();
    if let Some(path) = file {
        let text = read_file(path)?;
        let values: BTreeMap<String, serde_json::Value> = serde_json::from_slice(&text)
            .with_context(|| {
                format!(
                    "--secrets-file {}: not a JSON object of names to values",
                    path.display()
                )
            })?;
        for (name, value) in values {
            let serde_json::Value::String(value) = value else {
                anyhow::bail!(
                    "--secrets-file {}: the value of `{name}` is not a string",
                    path.display()
                );
            };
            secrets.insert(name, Some(value));
        }
    }
    let mut given = Vec::new();
    for flag in flags {
        let (name, value) = match flag.split_once('=') {
            Some((name, value)) => (name.to_owned(), Some(value.to_owned())),
            None => (flag.clone(), None),
        };
        anyhow::ensure!(
            !given.contains(&name),
            "--secret {name} is given twice: give each name once"
        );
        given.push(name.clone());
        secrets.insert(name, value);
    }
    for (name, value) in &secrets {
        sluice_store::validate_secret_name("--secret", name)?;
        if let Some(value) = value {
            sluice_store::check_secret_value(value).with_context(|| format!("secret {name}"))?;
        }
    }
    Ok((!secrets.is_empty()).then(|| Arc::new(SecretGrant::new(secrets))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_win_over_the_file_and_a_bare_name_is_granted_unset() {
        let dir = std::env::temp_dir().join(format!("sluice-run-secrets-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("secrets.json");
        std::fs::write(&file, r#"{"A": "from-file", "B": "kept"}"#).unwrap();
        let grant = secret_grant(&["A=from-flag".into(), "C".into()], Some(&file))
            .unwrap()
            .unwrap();
        let expected = SecretGrant::new([
            ("A".to_owned(), Some("from-flag".to_owned())),
            ("B".to_owned(), Some("kept".to_owned())),
            ("C".to_owned(), None),
        ]);
        assert_eq!(*grant, expected);
        assert!(secret_grant(&[], None).unwrap().is_none());
        assert!(secret_grant(&["A=1".into(), "A=2".into()], None).is_err());
        assert!(secret_grant(&["not a name=1".into()], None).is_err());
        std::fs::write(&file, r#"{"A": 1}"#).unwrap();
        assert!(secret_grant(&[], Some(&file)).is_err());
    }
}
