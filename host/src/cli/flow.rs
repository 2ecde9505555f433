//! The flow-control flags of `sluice types set` (`--max-running`, `--max-running-per-key`,
//! `--rate`, `--rate-per-key`, `--max-snoozes`) and `sluice types pause|resume`
//! (docs/flow-control.md).
//!
//! Owns: parsing these flags into a `sluice_store::FlowChange` and wording the settings
//! for people. Must not: enforce anything (the claim does, in SQL) or print JSON of its
//! own (`types show --json` prints `sluice_wire::JobTypeView`).

use sluice_store::{FlowChange, FlowLimits, Rate};

/// A cap given on the command line: a number of jobs, or `none`.
#[derive(Clone, Copy, Debug)]
pub struct Cap(Option<u32>);

fn parse_cap(text: &str) -> Result<Cap, String> {
    match text {
        "none" => Ok(Cap(None)),
        n => n
            .parse::<u32>()
            .ok()
            .filter(|n| *n > 0)
            .map(|n| Cap(Some(n)))
            .ok_or_else(|| format!("`{n}` is not a number of jobs (at least 1) or `none`")),
    }
}

/// A snooze limit given on the command line: a number (0 allowed), or `default`.
#[derive(Clone, Copy, Debug)]
pub struct SnoozeLimit(Option<u32>);

fn parse_snooze_limit(text: &str) -> Result<SnoozeLimit, String> {
    match text {
        "default" => Ok(SnoozeLimit(None)),
        n => n
            .parse::<u32>()
            .ok()
            .filter(|n| i32::try_from(*n).is_ok())
            .map(|n| SnoozeLimit(Some(n)))
            .ok_or_else(|| format!("`{n}` is not a number of snoozes (0 or more) or `default`")),
    }
}

/// A rate given on the command line: `N/PERIOD`, or `none`.
#[derive(Clone, Copy, Debug)]
pub struct RateArg(Option<Rate>);

fn parse_rate(text: &str) -> Result<RateArg, String> {
    match text {
        "none" => Ok(RateArg(None)),
        rate => Rate::parse(rate).map(|r| RateArg(Some(r))),
    }
}

#[derive(Debug, Default, clap::Args)]
pub struct FlowArgs {
    /// Most of this type's jobs running at once, fleet-wide (`none`: no cap).
    #[arg(long, value_name = "N|none", value_parser = parse_cap)]
    pub max_running: Option<Cap>,
    /// Most jobs with the same concurrency key (`enqueue --concurrency-key`) running at
    /// once, fleet-wide (`none`: no cap).
    #[arg(long, value_name = "N|none", value_parser = parse_cap)]
    pub max_running_per_key: Option<Cap>,
    /// Jobs started per period, a token bucket bursting to N: `100/1m`, `5/1s`
    /// (`none`: unlimited). Held-back jobs stay pending, no attempt spent.
    #[arg(long, value_name = "N/PERIOD|none", value_parser = parse_rate)]
    pub rate: Option<RateArg>,
    /// The same, for each concurrency key on its own.
    #[arg(long, value_name = "N/PERIOD|none", value_parser = parse_rate)]
    pub rate_per_key: Option<RateArg>,
    /// Times one job may snooze (`flow.snooze`, contract 0.3) before a snooze fails its
    /// attempt instead (`default`: the host's, 25).
    #[arg(long, value_name = "N|default", value_parser = parse_snooze_limit)]
    pub max_snoozes: Option<SnoozeLimit>,
}

impl FlowArgs {
    /// The change these flags ask for (`None`: none of them was given).
    pub fn change(&self) -> Option<FlowChange> {
        let change = FlowChange {
            paused: None,
            max_running: self.max_running.map(|c| c.0),
            max_running_per_key: self.max_running_per_key.map(|c| c.0),
            rate: self.rate.map(|r| r.0),
            rate_per_key: self.rate_per_key.map(|r| r.0),
            max_snoozes: self.max_snoozes.map(|n| n.0),
        };
        (change != FlowChange::default()).then_some(change)
    }
}

/// Pausing (`true`) or resuming a type.
pub fn pause(paused: bool) -> FlowChange {
    FlowChange {
        paused: Some(paused),
        ..Default::default()
    }
}

/// A type's flow controls as `types show` lines.
pub fn fields(flow: &FlowLimits) -> Vec<(&'static str, String)> {
    let cap = |n: Option<i32>| n.map_or("none".to_owned(), |n| n.to_string());
    let rate = |r: Option<Rate>| r.map_or("none".to_owned(), |r| r.to_string());
    vec![
        ("paused", if flow.paused { "yes" } else { "no" }.to_owned()),
        ("max running", cap(flow.max_running)),
        ("max running per key", cap(flow.max_running_per_key)),
        ("rate", rate(flow.rate())),
        ("rate per key", rate(flow.rate_per_key())),
        (
            "max snoozes",
            flow.max_snoozes
                .map_or("default (25)".to_owned(), |n| n.to_string()),
        ),
    ]
}
