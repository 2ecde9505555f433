//! The flags several verbs share: `--database-url`, `--log-format`, `--json`, `--tenant`,
//! `--egress-allow-network`, `--secrets-key-file` and `--secrets-old-key-file`. Each verb
//! declares only the groups it uses (`#[command(args = flags::…())]` in `cli/mod.rs` and on
//! the verbs' own subcommands), so `--help` lists a flag only where it means something
//! (`sluice task new --help` has no `--database-url`). Declared on a verb they are
//! `global` below it: `sluice jobs --tenant a list` and `sluice jobs list --tenant a` are
//! the same. Before the verb (`sluice --json --tenant a jobs list`, how scripts have always
//! written them) every one is still accepted, hidden from help; after the verb wins when
//! both are given, then before the verb, then the environment variable, then the default.
//!
//! Owns: those flags' names, environment variables and help, and [`Global`], the values
//! given, wherever. Must not: interpret them (the verbs do: `Global::keyring`,
//! `Global::networks`), or read the environment itself (clap does, per flag).

use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, builder::EnumValueParser, value_parser};

use crate::logging::LogFormat;

/// The values of the shared flags for this invocation (defaults where a verb does not
/// take a flag: no database, tenant `default`, tables, pretty logs, no networks or keys).
#[derive(Debug, Clone)]
pub struct Global {
    pub database_url: Option<String>,
    pub tenant: String,
    pub json: bool,
    pub log_format: LogFormat,
    pub egress_allow_networks: Vec<String>,
    pub secrets_key_file: Option<PathBuf>,
    pub secrets_old_key_files: Vec<PathBuf>,
}

const DATABASE_URL: &str = "database_url";
const LOG_FORMAT: &str = "log_format";
const JSON: &str = "json";
const TENANT: &str = "tenant";
const EGRESS: &str = "egress_allow_networks";
const KEY_FILE: &str = "secrets_key_file";
const OLD_KEY_FILES: &str = "secrets_old_key_files";

/// Every shared flag, by id.
const ALL: [&str; 7] = [
    DATABASE_URL,
    LOG_FORMAT,
    JSON,
    TENANT,
    EGRESS,
    KEY_FILE,
    OLD_KEY_FILES,
];

/// The id a flag has when given before the verb.
fn before_verb(id: &str) -> &'static str {
    match id {
        DATABASE_URL => "before_verb_database_url",
        LOG_FORMAT => "before_verb_log_format",
        JSON => "before_verb_json",
        TENANT => "before_verb_tenant",
        EGRESS => "before_verb_egress_allow_networks",
        KEY_FILE => "before_verb_secrets_key_file",
        OLD_KEY_FILES => "before_verb_secrets_old_key_files",
        other => unreachable!("no shared flag {other}"),
    }
}

/// Flag `id` as a verb declares it: `global` below the verb, with its environment
/// variable and default.
fn arg(id: &'static str) -> Arg {
    let arg = shared(Arg::new(id).global(true), id);
    match id {
        DATABASE_URL => arg.env("DATABASE_URL").hide_env_values(true),
        LOG_FORMAT => arg.default_value("pretty"),
        TENANT => arg.env("SLUICE_TENANT").default_value("default"),
        EGRESS => arg.env("SLUICE_EGRESS_ALLOW_NETWORK"),
        KEY_FILE => arg.env("SLUICE_SECRETS_KEY_FILE"),
        _ => arg,
    }
}

/// What flag `id` is, wherever it is given: its name, how it parses, its help.
fn shared(arg: Arg, id: &'static str) -> Arg {
    match id {
        DATABASE_URL => arg
            .long("database-url")
            .value_name("URL")
            .help("PostgreSQL connection string"),
        LOG_FORMAT => arg
            .long("log-format")
            .value_name("FORMAT")
            .value_parser(EnumValueParser::<LogFormat>::new())
            .help("Log format on stderr"),
        JSON => arg
            .long("json")
            .action(ArgAction::SetTrue)
            .help("Print machine-readable JSON instead of tables"),
        TENANT => arg
            .long("tenant")
            .value_name("TENANT")
            .help("The tenant to act for"),
        EGRESS => arg
            .long("egress-allow-network")
            .action(ArgAction::Append)
            .value_delimiter(',')
            .value_name("CIDR")
            .help(
                "Networks outbound HTTP may reach despite the deny list of private and \
                 special addresses, as CIDR (repeatable or comma-separated), e.g. \
                 `10.1.0.0/16`. Also lets allow lists name IP literals inside them. Logged \
                 when a worker starts",
            ),
        KEY_FILE => arg
            .long("secrets-key-file")
            .value_parser(value_parser!(PathBuf))
            .value_name("PATH")
            .help(
                "File holding the secrets key: 64 hex characters (32 random bytes, e.g. \
                 from `openssl rand -hex 32`), a trailing newline allowed. Or set \
                 SLUICE_SECRETS_KEY to the key itself (docs/secrets.md)",
            ),
        OLD_KEY_FILES => arg
            .long("secrets-old-key-file")
            .action(ArgAction::Append)
            .value_parser(value_parser!(PathBuf))
            .value_name("PATH")
            .help(
                "A previous secrets key that only decrypts, during a rotation (repeatable; \
                 or SLUICE_SECRETS_OLD_KEYS, comma-separated keys)",
            ),
        other => unreachable!("no shared flag {other}"),
    }
}

/// `--database-url` and `--log-format`: every verb that opens the database.
pub fn connect() -> [Arg; 2] {
    [arg(DATABASE_URL), arg(LOG_FORMAT)]
}

/// `--json`: verbs that print a result.
pub fn json() -> [Arg; 1] {
    [arg(JSON)]
}

/// `--tenant`: verbs that act for one tenant.
pub fn tenant() -> [Arg; 1] {
    [arg(TENANT)]
}

/// `--egress-allow-network`: verbs that send, or check allow lists against, outbound HTTP.
pub fn egress() -> [Arg; 1] {
    [arg(EGRESS)]
}

/// `--secrets-key-file` and `--secrets-old-key-file`: verbs that seal or open secrets.
pub fn keys() -> [Arg; 2] {
    [arg(KEY_FILE), arg(OLD_KEY_FILES)]
}

/// Every shared flag as `sluice` itself takes it, before the verb: accepted for every
/// verb (scripts write `sluice --json --tenant a jobs list`), hidden from help, without
/// environment variable or default (the verb's declaration has those).
pub fn before_any_verb() -> Vec<Arg> {
    ALL.into_iter()
        .map(|id| shared(Arg::new(before_verb(id)), id).hide(true))
        .collect()
}

/// Where the value of flag `id` comes from: given after the verb, else before it, else
/// the verb's environment variable or default. `None` when the verb does not take it.
fn level<'a>(chain: &[&'a ArgMatches], id: &'static str) -> Option<(&'a ArgMatches, &'static str)> {
    let top = chain[0];
    // Values of `global` flags reach every level below where they are declared; the
    // deepest level that knows the flag has the one given.
    let verb = chain[1..]
        .iter()
        .rev()
        .find(|m| m.try_contains_id(id).unwrap_or(false))
        .copied();
    let given = |m: &ArgMatches, id: &str| m.value_source(id) == Some(ValueSource::CommandLine);
    match verb {
        Some(m) if given(m, id) => Some((m, id)),
        _ if given(top, before_verb(id)) => Some((top, before_verb(id))),
        Some(m) => Some((m, id)),
        None => None,
    }
}

fn one<T: Clone + Send + Sync + 'static>(chain: &[&ArgMatches], id: &'static str) -> Option<T> {
    let (m, id) = level(chain, id)?;
    m.try_get_one::<T>(id).ok().flatten().cloned()
}

fn many<T: Clone + Send + Sync + 'static>(chain: &[&ArgMatches], id: &'static str) -> Vec<T> {
    level(chain, id)
        .and_then(|(m, id)| m.try_get_many::<T>(id).ok().flatten())
        .map(|values| values.cloned().collect())
        .unwrap_or_default()
}

impl Global {
    /// The shared flags' values in `matches` (the whole command line's).
    pub fn from_matches(matches: &ArgMatches) -> Global {
        let mut chain = vec![matches];
        while let Some((_, sub)) = chain[chain.len() - 1].subcommand() {
            chain.push(sub);
        }
        Global {
            database_url: one(&chain, DATABASE_URL),
            tenant: one(&chain, TENANT).unwrap_or_else(|| "default".to_owned()),
            json: one(&chain, JSON).unwrap_or(false),
            log_format: one(&chain, LOG_FORMAT).unwrap_or(LogFormat::Pretty),
            egress_allow_networks: many(&chain, EGRESS),
            secrets_key_file: one(&chain, KEY_FILE),
            secrets_old_key_files: many(&chain, OLD_KEY_FILES),
        }
    }
}
