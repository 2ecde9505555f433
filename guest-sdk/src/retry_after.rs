//! `Retry-After` (RFC 9110, section 10.2.3): how long a server asked the client to wait,
//! as delay-seconds (`120`) or an HTTP-date (`Sun, 06 Nov 1994 08:49:37 GMT`), read off a
//! response ([`crate::http::Response::retry_after`]) so that a task can snooze for it
//! (`v0_3::flow::snooze_when_busy`).
//!
//! Must not: read a clock itself (the caller passes `now`), or accept the obsolete
//! RFC 850 and asctime date forms (a server sending them gets the caller's default).
//!
//! The Python, JavaScript and C SDKs read it the same way (`sluice_http.py`,
//! `sluice-http.js`, `sluice_http.h`): ASCII whitespace around the value is ignored,
//! delay-seconds too large for the type saturate, the date fields are checked as here.
//! A change here is a change there (`host/sandbox/tests/it/retry_after.rs` runs every
//! language's reading against the same answers).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The delay a `Retry-After` value asks for, measured from `now`; a date in the past is
/// zero. `None` when the value is neither form.
pub(crate) fn parse(value: &[u8], now: SystemTime) -> Option<Duration> {
    let text = std::str::from_utf8(value.trim_ascii()).ok()?;
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        // Longer than u64 seconds: as long as a Duration goes.
        return Some(Duration::from_secs(text.parse().unwrap_or(u64::MAX)));
    }
    let at = UNIX_EPOCH + Duration::from_secs(imf_fixdate(text)?);
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Seconds since the Unix epoch of an IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
fn imf_fixdate(text: &str) -> Option<u64> {
    let parts: Vec<&str> = text.split(' ').collect();
    let [weekday, day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    const WEEKDAYS: [&str; 7] = ["Mon,", "Tue,", "Wed,", "Thu,", "Fri,", "Sat,", "Sun,"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    if !WEEKDAYS.contains(weekday) || day.len() != 2 || year.len() != 4 || time.len() != 8 {
        return None;
    }
    let month = MONTHS.iter().position(|m| m == month)? as u64 + 1;
    let (day, year): (u64, u64) = (digits(day)?, digits(year)?);
    let clock: Vec<u64> = time.split(':').map(digits).collect::<Option<_>>()?;
    let [hour, minute, second] = clock.as_slice() else {
        return None;
    };
    if !(1..=31).contains(&day) || year < 1970 || *hour > 23 || *minute > 59 || *second > 60 {
        return None;
    }
    let days = days_since_epoch(year, month, day);
    Some(days * 86_400 + hour * 3_600 + minute * 60 + second)
}

fn digits(text: &str) -> Option<u64> {
    (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

/// Days from 1970-01-01 to the civil date (Howard Hinnant's `days_from_civil`, years from
/// 1970 on).
fn days_since_epoch(year: u64, month: u64, day: u64) -> u64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year / 400;
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12; // March = 0
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn delay_seconds_and_dates_give_the_wait() {
        let now = at(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(parse(b"120", now), Some(Duration::from_secs(120)));
        assert_eq!(parse(b" 0 ", now), Some(Duration::ZERO));
        assert_eq!(parse(b"\t7\r\n", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse(b"Sun, 06 Nov 1994 08:50:07 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse(b"Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::ZERO)
        );
        // In the past: no wait.
        assert_eq!(
            parse(b"Sat, 05 Nov 1994 08:49:37 GMT", now),
            Some(Duration::ZERO)
        );
        // Leap years and the turn of a year.
        assert_eq!(
            imf_fixdate("Thu, 29 Feb 2024 00:00:00 GMT"),
            Some(1_709_164_800)
        );
        assert_eq!(imf_fixdate("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            imf_fixdate("Fri, 31 Dec 1999 23:59:59 GMT"),
            Some(946_684_799)
        );
    }

    #[test]
    fn anything_else_is_none() {
        let now = at(0);
        for bad in [
            &b""[..],
            b"soon",
            b"-5",
            b"1.5",
            b"Sunday, 06-Nov-94 08:49:37 GMT",
            b"Sun Nov  6 08:49:37 1994",
            b"Sun, 06 Nov 1994 08:49:37 UTC",
            b"Sun, 06 Foo 1994 08:49:37 GMT",
            b"Sun, 32 Nov 1994 08:49:37 GMT",
            b"Sun, 06 Nov 1994 24:49:37 GMT",
            b"\xff",
            // Only ASCII whitespace is trimmed (as in the other SDKs).
            "\u{a0}5".as_bytes(),
            b"5 5",
        ] {
            assert_eq!(parse(bad, now), None, "{:?}", String::from_utf8_lossy(bad));
        }
        assert_eq!(
            parse(b"99999999999999999999999", now),
            Some(Duration::from_secs(u64::MAX))
        );
    }
}
