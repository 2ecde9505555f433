//! The regular expressions the OpenAPI document gives for text the server parses
//! (durations, cron expressions, URLs, allow-list entries, endpoint ids, instants), built
//! from the same constants as the checks they describe, so the document and the server
//! cannot drift apart. Every pattern is anchored and matches only text the server
//! accepts (a string the pattern allows is never refused for its form); where the
//! server's grammar is wider than a regular expression can bound (multi-term durations
//! such as `1h 30m`, cron names such as `MON`), the pattern gives the plain subset.
//!
//! Owns: the patterns and their unit tests (each checked against the server's own
//! parser). Must not: parse requests (the handlers and the store do).

use std::time::Duration;

/// Text the server can store: no NUL (U+0000) anywhere (`validate::text`).
pub const NO_NUL: &str = r"^[^\x00]*$";

/// An integer from `lo` to `hi` in decimal, without leading zeros (a group).
pub fn int_range(lo: u64, hi: u64) -> String {
    assert!(lo <= hi, "an empty range {lo}..={hi}");
    let mut alternatives = Vec::new();
    let mut start = lo;
    loop {
        let digits = start.to_string().len() as u32;
        let top = 10u64
            .checked_pow(digits)
            .map_or(u64::MAX, |power| power - 1);
        let end = top.min(hi);
        same_length(
            &start.to_string(),
            &end.to_string(),
            String::new(),
            &mut alternatives,
        );
        if end == hi {
            break;
        }
        start = end + 1;
    }
    format!("(?:{})", alternatives.join("|"))
}

/// Alternatives matching the numbers from `a` to `b`, both of the same length.
fn same_length(a: &str, b: &str, prefix: String, out: &mut Vec<String>) {
    if a.is_empty() {
        out.push(prefix);
        return;
    }
    let (a0, a_rest) = (a.as_bytes()[0], &a[1..]);
    let (b0, b_rest) = (b.as_bytes()[0], &b[1..]);
    if a0 == b0 {
        return same_length(a_rest, b_rest, format!("{prefix}{}", a0 as char), out);
    }
    let n = a_rest.len();
    let (zeros, nines) = ("0".repeat(n), "9".repeat(n));
    let any = match n {
        0 => String::new(),
        1 => "[0-9]".to_owned(),
        n => format!("[0-9]{{{n}}}"),
    };
    let first_full = if a_rest == zeros {
        a0
    } else {
        same_length(a_rest, &nines, format!("{prefix}{}", a0 as char), out);
        a0 + 1
    };
    let last_full = if b_rest == nines { b0 } else { b0 - 1 };
    if first_full <= last_full {
        let class = if first_full == last_full {
            (first_full as char).to_string()
        } else {
            format!("[{}-{}]", first_full as char, last_full as char)
        };
        out.push(format!("{prefix}{class}{any}"));
    }
    if b_rest != nines {
        same_length(&zeros, b_rest, format!("{prefix}{}", b0 as char), out);
    }
}

/// The units a documented duration may use, with their length in milliseconds.
const UNITS: [(&str, u64); 5] = [
    ("ms", 1),
    ("s", 1_000),
    ("m", 60_000),
    ("h", 3_600_000),
    ("d", 86_400_000),
];

/// A duration from `min` to `max` written as one term, `<integer><unit>` (`250ms`,
/// `30s`, `5m`, `2h`, `7d`), or a bare integer of seconds.
pub fn duration(min: Duration, max: Duration) -> String {
    let (min, max) = (min.as_millis() as u64, max.as_millis() as u64);
    let mut terms = Vec::new();
    for (unit, ms) in UNITS {
        let (lo, hi) = (min.div_ceil(ms), max / ms);
        if lo <= hi {
            terms.push(format!("{}{unit}", int_range(lo, hi)));
            if unit == "s" {
                terms.push(int_range(lo, hi));
            }
        }
    }
    format!("^(?:{})$", terms.join("|"))
}

/// A list of integers from `lo` to `hi`, `*`, or `*/step`: one cron field.
fn cron_field(lo: u64, hi: u64, wildcard: bool) -> String {
    let number = int_range(lo, hi);
    let list = format!("{number}(?:,{number})*");
    if wildcard {
        format!("(?:\\*(?:/{})?|{list})", int_range(1, hi))
    } else {
        list
    }
}

/// The nicknames a cron expression may be instead of fields.
pub const CRON_NICKNAMES: [&str; 6] =
    ["yearly", "annually", "monthly", "weekly", "daily", "hourly"];

/// A cron expression of 5 fields (minute hour day month weekday) or 6 (seconds first),
/// each `*`, `*/step` or a list of numbers, or a nickname (`@daily`). A day list naming
/// a 29th, 30th or 31st goes with every month (`*` or `*/step`), so the expression
/// always matches a future time.
pub fn cron() -> String {
    let minute = cron_field(0, 59, true);
    let hour = cron_field(0, 23, true);
    let any_month = format!("\\*(?:/{})?", int_range(1, 12));
    let any_day = format!("\\*(?:/{})?", int_range(1, 31));
    let day_month = format!(
        "(?:(?:{any_day}|{days}) {any_month}|(?:{any_day}|{short_days}) {months})",
        days = cron_field(1, 31, false),
        short_days = cron_field(1, 28, false),
        months = cron_field(1, 12, false),
    );
    let weekday = cron_field(0, 7, true);
    format!(
        "^(?:@(?:{nicknames})|(?:{minute} )?{minute} {hour} {day_month} {weekday})$",
        nicknames = CRON_NICKNAMES.join("|"),
    )
}

/// A webhook endpoint id in a path: `ep_12` or `12` (a positive `i64`).
pub fn endpoint_id() -> String {
    format!("^(?:ep_)?0*{}$", int_range(1, i64::MAX as u64))
}

/// `http` or `https`, in any case.
const HTTP_SCHEME: &str = "[Hh][Tt][Tt][Pp][Ss]?://";

/// A webhook URL: `http(s)://`, an authority without spaces, controls or credentials
/// (`@`), then anything printable (ASCII, so characters and bytes count alike).
pub fn webhook_url() -> String {
    format!("^{HTTP_SCHEME}[A-Za-z0-9._~!$&'()*+,;=:%\\[\\]-]+(?:[/?#][!-~]*)?$")
}

/// An allow-list entry naming a host: `scheme://name[:port]` or
/// `scheme://*.name[:port]`, the last label starting with a letter (IP literals, which
/// depend on the networks the operator opened, are left to the server's message).
pub fn allow_entry() -> String {
    let label = "[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?";
    let last = "[A-Za-z](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?";
    format!(
        "^{HTTP_SCHEME}(?:\\*\\.)?(?:{label}\\.)*{last}(?::{port})?/?$",
        port = int_range(1, u64::from(u16::MAX))
    )
}

/// The longest allow-list entry the document offers: a host name is at most 253
/// characters, so no entry this long has a longer one.
pub const ALLOW_ENTRY_MAX_CHARS: usize = 253;

/// An event type filter: `*`, an event type, or `prefix.*`.
pub const EVENT_PATTERN: &str = r"^(?:\*|[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}(?:\.\*)?)$";

/// An event type: 1 to 128 of letters, digits, `_`, `.`, `-`, not starting with `.`/`-`.
pub const EVENT_TYPE: &str = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$";

/// Text without NUL that does not start with `prefix` (a reserved prefix).
pub fn not_starting_with(prefix: &str) -> String {
    let mut alternatives: Vec<String> = Vec::new();
    for i in 0..prefix.len() {
        let (head, next) = (&prefix[..i], &prefix[i..=i]);
        if !head.is_empty() {
            alternatives.push(escape(head));
        }
        alternatives.push(format!("{}[^\\x00{}][^\\x00]*", escape(head), escape(next)));
    }
    format!("^(?:{})$", alternatives.join("|"))
}

/// `text` with the regex metacharacters it may hold escaped.
fn escape(text: &str) -> String {
    text.chars()
        .map(|c| {
            if ".*+?()[]{}|^$\\-".contains(c) {
                format!("\\{c}")
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// An RFC 3339 instant whose year is from `first` to `last` (the offset cannot carry it
/// out of `first - 1 ..= last + 1`); the `date-time` format says the rest.
pub fn year_prefix(first: u64, last: u64) -> String {
    format!("^{}-", int_range(first, last))
}

/// A cursor of `GET /v1/jobs`: a job id (`i64`).
pub fn cursor() -> String {
    format!("^(?:0|-?{})$", int_range(1, i64::MAX as u64))
}

#[cfg(test)]
#[path = "patterns_tests.rs"]
mod tests;
