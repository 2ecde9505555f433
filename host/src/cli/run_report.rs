//! What `sluice run` prints and how it exits: the attempt's outcome, output, logs, fuel,
//! duration, HTTP requests and follow-up jobs, as `key  value` lines for people or as
//! `sluice_wire::LocalRunView` (`--json`), and the exit code of each outcome
//! ([`Exit`], documented in docs/cli.md).
//!
//! Owns: the outcome classes and their codes. Must not: run anything or decide outcomes
//! (the sandbox's `Outcome` and `Failure` are read, never made here).

use std::process::ExitCode;

use sluice_sandbox::{Failure, FollowUp, Outcome, RunReport};
use sluice_shared::units::format_size;
use sluice_wire::jobs::bytes_as_json;
use sluice_wire::{FollowUpView, LocalRunView};

use super::output::Printer;

/// The exit codes of `sluice run`, one per class of outcome. `1` stays "sluice itself
/// failed" (the sandbox would not start) and `2` "bad input" (clap's usage errors, and
/// a component, payload, allow list or secret that cannot be used).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// `0`: the task returned `ok(output)`.
    Completed = 0,
    /// `2`: the input cannot be used (see [`super::run::BadInput`]).
    BadInput = 2,
    /// `3`: the task asked to be retried, or trapped (a panic, a stack overflow): the
    /// queue would retry the job.
    Retry = 3,
    /// `4`: the task returned `fatal`: the queue would kill the job at once.
    Fatal = 4,
    /// `5`: a limit stopped the attempt: timeout, fuel, memory, table or output size.
    LimitExceeded = 5,
    /// `6`: the host failed to run the attempt (not the task's fault).
    Internal = 6,
    /// `7`: the run suspended itself (contract 0.3's `flow.snooze`): the queue would run
    /// it again later without spending an attempt.
    Suspended = 7,
    /// `130`: interrupted (Ctrl-C or SIGTERM), as shells report SIGINT.
    Cancelled = 130,
}

impl Exit {
    /// The class of `outcome`.
    pub fn of(outcome: &Outcome) -> Exit {
        match outcome {
            Outcome::Completed { .. } => Exit::Completed,
            Outcome::Failed(failure) => match failure {
                Failure::GuestRetry(_) | Failure::Trap(_) => Exit::Retry,
                Failure::Journal { fatal: false, .. } => Exit::Retry,
                Failure::GuestFatal(_) | Failure::Journal { fatal: true, .. } => Exit::Fatal,
                Failure::Timeout(_)
                | Failure::FuelExhausted(_)
                | Failure::MemoryLimit(_)
                | Failure::TableLimit(_)
                | Failure::OutputTooLarge(_) => Exit::LimitExceeded,
                Failure::SleepTooLong(_) => Exit::LimitExceeded,
                Failure::Cancelled => Exit::Cancelled,
                Failure::Internal(_) => Exit::Internal,
            },
            Outcome::Suspended(_) => Exit::Suspended,
        }
    }

    /// The label `--json` prints as `outcome`.
    pub fn label(self) -> &'static str {
        match self {
            Exit::Completed => "completed",
            Exit::BadInput => "bad_input",
            Exit::Retry => "retry",
            Exit::Fatal => "fatal",
            Exit::LimitExceeded => "limit_exceeded",
            Exit::Internal => "internal",
            Exit::Suspended => "suspended",
            Exit::Cancelled => "cancelled",
        }
    }

    /// The process's exit code.
    pub fn code(self) -> u8 {
        self as u8
    }
}

/// Prints `report` and returns the exit code of its outcome.
pub fn print(printer: &Printer, report: &RunReport) -> ExitCode {
    let exit = Exit::of(&report.outcome);
    let view = view(exit, report);
    if printer.is_json() {
        printer.value(&view, &[]);
        return ExitCode::from(exit.code());
    }
    let mut fields = vec![("outcome", exit.label().to_owned())];
    if let Some(reason) = &view.reason {
        fields.push(("reason", reason.clone()));
    }
    if let Outcome::Completed { output } = &report.outcome {
        fields.push(("output", output_text(output)));
    }
    fields.extend([
        ("fuel used", view.fuel_used.to_string()),
        ("duration", format!("{:.1} ms", view.duration_ms)),
        ("peak memory", format_size(view.peak_memory_bytes)),
        ("http requests", http_text(&view.http_outcomes)),
        ("follow-ups", view.follow_ups.len().to_string()),
    ]);
    printer.value(&view, &fields);
    for follow_up in &view.follow_ups {
        println!("follow-up  {} (not enqueued)", follow_up_text(follow_up));
    }
    if view.logs.is_empty() {
        println!("logs: (none)");
    } else {
        println!("logs:");
        print!("{}", view.logs);
        if !view.logs.ends_with('\n') {
            println!();
        }
        if view.logs_truncated {
            println!(
                "(log cut at --max-log: {} bytes dropped)",
                report.logs_dropped_bytes
            );
        }
    }
    ExitCode::from(exit.code())
}

/// The JSON object of one local attempt.
fn view(exit: Exit, report: &RunReport) -> LocalRunView {
    let (output, output_bytes) = match &report.outcome {
        Outcome::Completed { output } => (Some(bytes_as_json(output)), output.len() as u64),
        Outcome::Failed(_) | Outcome::Suspended(_) => (None, 0),
    };
    LocalRunView {
        outcome: exit.label(),
        exit_code: exit.code(),
        reason: match &report.outcome {
            Outcome::Suspended(why) => Some(why.to_string()),
            outcome => outcome.failure().map(Failure::reason),
        },
        output,
        output_bytes,
        logs: String::from_utf8_lossy(&report.logs).into_owned(),
        logs_truncated: report.logs_truncated,
        fuel_used: report.fuel_used,
        duration_ms: report.elapsed.as_secs_f64() * 1000.0,
        peak_memory_bytes: report.peak_memory_bytes,
        http_requests: report.http.calls.len(),
        http_outcomes: report.http.calls.iter().map(|c| c.outcome).collect(),
        follow_ups: report.follow_ups.iter().map(follow_up_view).collect(),
    }
}

fn follow_up_view(follow_up: &FollowUp) -> FollowUpView {
    FollowUpView {
        job_type: follow_up.job_type.clone(),
        payload: bytes_as_json(&follow_up.payload),
        priority: follow_up.priority,
        delay_ms: follow_up
            .delay
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        run_at_ms: follow_up.run_at_ms,
        max_attempts: follow_up.max_attempts,
        idempotency_key: follow_up.idempotency_key.clone(),
    }
}

/// `TYPE PAYLOAD` and the options the task set (`delay 500ms`, `priority 20`, …).
fn follow_up_text(f: &FollowUpView) -> String {
    let mut text = format!("{} {}", f.job_type, f.payload);
    if let Some(ms) = f.delay_ms {
        text.push_str(&format!(" delay {ms}ms"));
    }
    if let Some(at) = f.run_at_ms {
        text.push_str(&format!(" run-at {at}ms"));
    }
    if let Some(p) = f.priority {
        text.push_str(&format!(" priority {p}"));
    }
    if let Some(n) = f.max_attempts {
        text.push_str(&format!(" max-attempts {n}"));
    }
    if let Some(key) = &f.idempotency_key {
        text.push_str(&format!(" key {key}"));
    }
    text
}

/// The output as text when it is UTF-8, else its size.
fn output_text(output: &[u8]) -> String {
    match std::str::from_utf8(output) {
        Ok(text) => text.to_owned(),
        Err(_) => format!(
            "({} of binary data, not UTF-8; --json shows it as lossy text)",
            format_size(output.len() as u64)
        ),
    }
}

/// `0`, or `2 (ok, denied)`.
fn http_text(outcomes: &[&str]) -> String {
    if outcomes.is_empty() {
        "0".to_owned()
    } else {
        format!("{} ({})", outcomes.len(), outcomes.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn each_outcome_class_has_its_own_code() {
        let failed = |f| Exit::of(&Outcome::Failed(f));
        assert_eq!(
            Exit::of(&Outcome::Completed { output: vec![] }),
            Exit::Completed
        );
        assert_eq!(failed(Failure::GuestRetry("x".into())), Exit::Retry);
        assert_eq!(failed(Failure::Trap("stack overflow".into())), Exit::Retry);
        assert_eq!(failed(Failure::GuestFatal("x".into())), Exit::Fatal);
        assert_eq!(failed(Failure::FuelExhausted(10)), Exit::LimitExceeded);
        assert_eq!(
            failed(Failure::Timeout(Duration::from_secs(1))),
            Exit::LimitExceeded
        );
        assert_eq!(failed(Failure::MemoryLimit(1)), Exit::LimitExceeded);
        assert_eq!(failed(Failure::OutputTooLarge(1)), Exit::LimitExceeded);
        assert_eq!(failed(Failure::Internal("x".into())), Exit::Internal);
        assert_eq!(failed(Failure::Cancelled), Exit::Cancelled);
        let codes = [
            Exit::Completed,
            Exit::BadInput,
            Exit::Retry,
            Exit::Fatal,
            Exit::LimitExceeded,
            Exit::Internal,
            Exit::Cancelled,
        ]
        .map(Exit::code);
        let mut unique = codes.to_vec();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), codes.len(), "{codes:?}");
        assert_eq!(Exit::BadInput.code(), 2, "clap's usage code");
    }
}
