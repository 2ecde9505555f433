//! Durations as the API writes them, and the chunks `wait` asks for.

use std::time::Duration;

use crate::wait::{MAX_WAIT_CHUNK, format_duration, next_chunk};

#[test]
fn durations_use_their_largest_exact_unit() {
    let cases = [
        (Duration::ZERO, "0s"),
        (Duration::from_nanos(1), "1ms"),
        (Duration::from_micros(1500), "2ms"),
        (Duration::from_millis(250), "250ms"),
        (Duration::from_millis(1500), "1500ms"),
        (Duration::from_secs(1), "1s"),
        (Duration::from_secs(30), "30s"),
        (Duration::from_secs(90), "90s"),
        (Duration::from_secs(300), "5m"),
        (Duration::from_secs(3600), "1h"),
        (Duration::from_secs(5400), "90m"),
        (Duration::from_secs(7 * 86_400), "7d"),
    ];
    for (duration, written) in cases {
        assert_eq!(format_duration(duration), written, "{duration:?}");
    }
}

#[test]
fn wait_chunks_are_at_most_a_minute_and_none_when_nothing_is_left() {
    assert_eq!(MAX_WAIT_CHUNK, Duration::from_secs(60));
    assert_eq!(next_chunk(Duration::from_secs(150)), Some(MAX_WAIT_CHUNK));
    assert_eq!(
        next_chunk(Duration::from_secs(30)),
        Some(Duration::from_secs(30))
    );
    assert_eq!(
        next_chunk(Duration::from_millis(250)).map(format_duration),
        Some("250ms".to_owned())
    );
    assert_eq!(next_chunk(Duration::from_micros(999)), None);
    assert_eq!(next_chunk(Duration::ZERO), None);
}

#[test]
fn a_long_wait_is_cut_in_minutes_then_the_rest() {
    let mut left = Duration::from_millis(150_500);
    let mut chunks = Vec::new();
    while let Some(chunk) = next_chunk(left) {
        chunks.push(format_duration(chunk));
        left -= chunk;
    }
    assert_eq!(chunks, ["1m", "1m", "30500ms"]);
}
