//! Small pieces of markup shared by the pages: times, durations, sizes, job states,
//! payloads and key/value tables.
//!
//! Owns: how a value looks on a page. Must not: fetch data or decide anything.

use chrono::{DateTime, Utc};
use maud::{Markup, html};
use sluice_store::JobState;

/// A point in time, UTC, second precision, machine-readable in `datetime`.
pub fn when(at: DateTime<Utc>) -> Markup {
    html! {
        time datetime=(at.to_rfc3339()) { (at.format("%Y-%m-%d %H:%M:%S")) }
    }
}

/// An optional point in time (`—` when absent).
pub fn when_opt(at: Option<DateTime<Utc>>) -> Markup {
    match at {
        Some(at) => when(at),
        None => html! { span.muted { "—" } },
    }
}

/// `how long` for people: `850 ms`, `12.3 s`, `4 min 05 s`, `3 h 02 min`, `2 d 4 h`.
pub fn duration_text(seconds: f64) -> String {
    if !seconds.is_finite() || seconds < 0.0 {
        return "—".into();
    }
    if seconds < 1.0 {
        return format!("{:.0} ms", seconds * 1000.0);
    }
    if seconds < 60.0 {
        return format!("{seconds:.1} s");
    }
    let whole = seconds as u64;
    let (d, h, m, s) = (
        whole / 86400,
        whole / 3600 % 24,
        whole / 60 % 60,
        whole % 60,
    );
    if d > 0 {
        format!("{d} d {h} h")
    } else if h > 0 {
        format!("{h} h {m:02} min")
    } else {
        format!("{m} min {s:02} s")
    }
}

/// The time between two points (`—` while `end` is unknown).
pub fn between(start: DateTime<Utc>, end: Option<DateTime<Utc>>) -> String {
    end.map_or_else(
        || "—".into(),
        |end| duration_text((end - start).num_milliseconds() as f64 / 1000.0),
    )
}

/// A size in bytes for people (`512 B`, `1.5 KiB`, `20.0 MiB`).
pub fn bytes_text(bytes: i64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64;
    let mut unit = "B";
    for next in UNITS {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = next;
    }
    format!("{value:.1} {unit}")
}

/// A whole number with thousands separators (`12,345`).
pub fn count(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// A job state as a coloured label.
pub fn state_badge(state: JobState) -> Markup {
    html! { span class={ "state state-" (state.as_str()) } { (state.as_str()) } }
}

/// The job states, in lifecycle order (the filter's choices).
pub const STATES: [JobState; 6] = [
    JobState::Pending,
    JobState::Running,
    JobState::Waiting,
    JobState::Completed,
    JobState::Dead,
    JobState::Cancelled,
];

/// A job state from its label.
pub fn parse_state(label: &str) -> Option<JobState> {
    STATES.into_iter().find(|state| state.as_str() == label)
}

/// Bytes for people: pretty JSON when they are JSON, else the text (invalid UTF-8
/// replaced), with a note saying so.
pub fn payload_text(bytes: &[u8]) -> (String, Option<String>) {
    match serde_json::from_slice::<serde_json::Value>(bytes) {
        Ok(value) => (
            serde_json::to_string_pretty(&value).unwrap_or_default(),
            None,
        ),
        Err(_) if bytes.is_empty() => (String::new(), Some("empty".into())),
        Err(_) => (
            String::from_utf8_lossy(bytes).into_owned(),
            Some(format!("{} bytes, not JSON", count(bytes.len() as i64))),
        ),
    }
}

/// A two-column table of labelled values.
pub fn facts<'a>(rows: impl IntoIterator<Item = (&'a str, Markup)>) -> Markup {
    html! {
        table.facts {
            @for (label, value) in rows {
                tr { th scope="row" { (label) } td { (value) } }
            }
        }
    }
}

/// An optional value as text (`—` when absent).
pub fn opt<T: std::fmt::Display>(value: Option<T>) -> Markup {
    match value {
        Some(value) => html! { (value) },
        None => html! { span.muted { "—" } },
    }
}

/// The hidden CSRF field every action form carries.
pub fn csrf_field(csrf: &str) -> Markup {
    html! { input type="hidden" name="csrf" value=(csrf); }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_well() {
        assert_eq!(duration_text(0.25), "250 ms");
        assert_eq!(duration_text(12.34), "12.3 s");
        assert_eq!(duration_text(245.0), "4 min 05 s");
        assert_eq!(duration_text(3.0 * 3600.0 + 120.0), "3 h 02 min");
        assert_eq!(bytes_text(512), "512 B");
        assert_eq!(bytes_text(1536), "1.5 KiB");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(count(-1000), "-1,000");
        assert_eq!(parse_state("dead"), Some(JobState::Dead));
        assert_eq!(parse_state("nope"), None);
        let (text, note) = payload_text(br#"{"a":1}"#);
        assert!(text.contains("\"a\": 1") && note.is_none());
        let (_, note) = payload_text(b"\xff\xfe");
        assert_eq!(note.as_deref(), Some("2 bytes, not JSON"));
    }
}
