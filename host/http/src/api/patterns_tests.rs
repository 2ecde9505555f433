//! Every pattern against the parser it describes: a string it matches is accepted, and
//! the bounds of each range are exact.

use std::time::Duration;

use regex::Regex;
use sluice_egress::NetworkPolicy;
use sluice_store::{MAX_DELAY, MAX_JITTER, MAX_RETRY_STEP, next_slot_after, parse_cron};

use super::*;
use sluice_shared::units::parse_duration;

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap_or_else(|e| panic!("{pattern}: {e}"))
}

fn whole(pattern: &str) -> Regex {
    re(&format!("^{pattern}$"))
}

#[test]
fn integer_ranges_match_exactly_their_numbers() {
    for (lo, hi) in [
        (0, 0),
        (0, 9),
        (1, 12),
        (0, 59),
        (7, 1234),
        (100, 300),
        (1971, 9998),
        (1, 65535),
    ] {
        let pattern = whole(&int_range(lo, hi));
        for n in 0..=hi.max(9999) + 11 {
            assert_eq!(
                pattern.is_match(&n.to_string()),
                (lo..=hi).contains(&n),
                "{n} in {lo}..={hi}"
            );
        }
        assert!(!pattern.is_match(&format!("0{lo}")), "no leading zero");
    }
    let max = whole(&int_range(1, i64::MAX as u64));
    assert!(max.is_match("9223372036854775807"));
    assert!(!max.is_match("9223372036854775808"));
    assert!(!max.is_match("10000000000000000000"));
    assert!(max.is_match("999999999999999999"));
}

#[test]
fn durations_in_the_pattern_parse_within_their_bounds() {
    for (min, max) in [
        (Duration::ZERO, MAX_DELAY),
        (Duration::ZERO, MAX_JITTER),
        (Duration::ZERO, MAX_RETRY_STEP),
        (Duration::from_millis(100), Duration::from_secs(300)),
    ] {
        let pattern = re(&duration(min, max));
        let (lo, hi) = (min.as_millis() as u64, max.as_millis() as u64);
        let units = UNITS.iter().map(|(unit, ms)| (*unit, *ms));
        // A bare number is seconds.
        for (unit, ms) in units.chain([("", 1000)]) {
            for n in [0, 1, lo / ms, lo.div_ceil(ms), hi / ms, hi / ms + 1] {
                let text = format!("{n}{unit}");
                let inside = (min..=max).contains(&parse_duration(&text).unwrap());
                assert_eq!(
                    pattern.is_match(&text),
                    inside,
                    "{text} in {min:?}..={max:?}"
                );
            }
        }
        assert!(!pattern.is_match("1h 30m"), "one term only");
        assert!(!pattern.is_match(" 5s"));
    }
}

#[test]
fn cron_expressions_in_the_pattern_parse_and_match_a_future_time() {
    let pattern = re(&cron());
    let now = chrono::Utc::now();
    for text in [
        "*/5 * * * *",
        "0 3 * * *",
        "59 23 31 * 7",
        "0 0 31 */12 *",
        "0 0 28 2 *",
        "0 0 1,15,28 1,2,12 0,7",
        "*/59 */23 */31 */12 */7",
        "0 */1 * * * *",
        "59 59 23 1 1 0",
    ]
    .into_iter()
    .map(str::to_owned)
    .chain(CRON_NICKNAMES.iter().map(|n| format!("@{n}")))
    {
        assert!(pattern.is_match(&text), "{text}");
        let cron = parse_cron(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert!(
            next_slot_after(&cron, sluice_store::parse_tz("UTC").unwrap(), now).is_some(),
            "{text} never matches"
        );
    }
    for text in [
        "0 0 30 2 *",
        "60 * * * *",
        "* * * *",
        "* 24 * * *",
        "* * 0 * *",
    ] {
        assert!(!pattern.is_match(text), "{text}");
    }
}

#[test]
fn allow_entries_and_urls_in_the_patterns_are_accepted() {
    let entry = re(&allow_entry());
    for text in [
        "https://api.example.com",
        "HTTP://*.example.com:8080",
        "https://a:1/",
        "http://x_y.z-1.io:65535",
    ] {
        assert!(entry.is_match(text), "{text}");
        sluice_shared::grants::normalise(
            "allow_http",
            &[text.to_owned()],
            &NetworkPolicy::default(),
        )
        .unwrap_or_else(|e| panic!("{text}: {e}"));
    }
    for text in [
        "http://1.2.3.4",
        "http://[::1]",
        "ftp://a.b",
        "https://a:0",
        "https://a/b",
    ] {
        assert!(!entry.is_match(text), "{text}");
    }
    let url = re(&webhook_url());
    for text in [
        "https://example.com/hooks?x=1#y",
        "HTTP://a:1",
        "http://[::1]/@",
    ] {
        assert!(url.is_match(text), "{text}");
    }
    for text in [
        "https://u@example.com",
        "https://",
        "https://a b",
        "ftp://a",
    ] {
        assert!(!url.is_match(text), "{text}");
    }
}

#[test]
fn names_ids_events_and_cursors() {
    let reserved = re(&not_starting_with("sluice."));
    for ok in ["s", "sluice", "sluicE.x", "sluice-x", "echo", "a.sluice.b"] {
        assert!(reserved.is_match(ok), "{ok}");
    }
    for bad in ["", "sluice.", "sluice.webhook", "a\0"] {
        assert!(!reserved.is_match(bad), "{bad:?}");
    }
    let id = re(&endpoint_id());
    for ok in ["1", "ep_12", "ep_0007", "9223372036854775807"] {
        assert!(id.is_match(ok), "{ok}");
        sluice_store::parse_endpoint_id(ok).unwrap();
    }
    for bad in ["0", "ep_", "ep_-1", "9223372036854775808"] {
        assert!(!id.is_match(bad), "{bad}");
    }
    let event = re(EVENT_TYPE);
    let filter = re(EVENT_PATTERN);
    for ok in ["invoice.paid", "_", "a-b.c"] {
        assert!(event.is_match(ok) && filter.is_match(ok), "{ok}");
        sluice_store::validate_event_type(ok).unwrap();
    }
    assert!(filter.is_match("*") && filter.is_match("invoice.*"));
    assert!(!event.is_match(".a") && !filter.is_match("a*") && !filter.is_match("*.*"));
    let cursor = re(&cursor());
    for ok in ["0", "42", "-7", "9223372036854775807"] {
        assert!(cursor.is_match(ok), "{ok}");
        ok.parse::<i64>().unwrap();
    }
    assert!(!cursor.is_match("x") && !cursor.is_match("99999999999999999999"));
    assert!(re(NO_NUL).is_match("é") && !re(NO_NUL).is_match("a\0"));
}
