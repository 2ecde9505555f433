//! The rules of webhook endpoints that need no database: the reserved names, the
//! bounds of URLs, schedules and timeouts, and the syntax of event types and filters —
//! checked here for every caller before a statement runs.
//!
//! Must not: speak SQL (the statements are `webhooks`'), or judge a URL's destination
//! (the egress connector does, at send time).

use std::time::Duration;

use crate::StoreError;

/// The reserved job type of webhook deliveries; no user type may take a `sluice.` name.
pub const WEBHOOK_JOB_TYPE: &str = "sluice.webhook";
/// The event type of `webhooks test` pings (sent whatever the endpoint's filter).
pub const TEST_EVENT_TYPE: &str = "sluice.test";
/// The retry schedule when an endpoint sets none (after attempt 1, 2, ...): Standard
/// Webhooks-like, ≈ 28 hours in all.
pub const DEFAULT_RETRY_SCHEDULE: [Duration; 7] = [
    Duration::from_secs(5),
    Duration::from_secs(5 * 60),
    Duration::from_secs(30 * 60),
    Duration::from_secs(2 * 3600),
    Duration::from_secs(5 * 3600),
    Duration::from_secs(10 * 3600),
    Duration::from_secs(10 * 3600),
];
/// The total time an attempt may take when an endpoint sets none.
pub const DEFAULT_WEBHOOK_TIMEOUT: Duration = Duration::from_secs(15);
/// Most endpoints one tenant may have (every event fans out to each of them).
pub const MAX_ENDPOINTS_PER_TENANT: i64 = 100;
/// Longest URL.
pub const MAX_URL_LEN: usize = 2048;
/// Most retries in a schedule.
pub const MAX_RETRY_STEPS: usize = 20;
/// The longest step of a retry schedule: 7 days.
pub const MAX_RETRY_STEP: Duration = Duration::from_secs(7 * 24 * 3600);
/// The shortest attempt timeout an endpoint may set: 100 ms.
pub const MIN_WEBHOOK_TIMEOUT: Duration = Duration::from_millis(100);
/// The longest attempt timeout an endpoint may set: 5 minutes.
pub const MAX_WEBHOOK_TIMEOUT: Duration = Duration::from_secs(300);

/// The name a signing secret is sealed under (bound in as associated data with the
/// tenant), so a ciphertext copied to another endpoint does not open.
pub fn endpoint_secret_name(id: i64) -> String {
    format!("webhook-endpoint:{id}")
}

/// `ep_12` → 12; `12` → 12. The error names the field.
pub fn parse_endpoint_id(text: &str) -> Result<i64, StoreError> {
    let digits = text.strip_prefix("ep_").unwrap_or(text);
    digits
        .parse::<i64>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| StoreError::InvalidInput {
            field: "endpoint",
            message: format!("`{text}` is not an endpoint id (ep_<number>)"),
        })
}

/// Checks an event type: 1 to 128 of letters, digits, `_`, `.`, `-`, not starting with
/// `.` or `-` (also a CHECK constraint and checked by `sluice.send_event`).
pub fn validate_event_type(event_type: &str) -> Result<(), StoreError> {
    let ok = !event_type.is_empty()
        && event_type.len() <= 128
        && !event_type.starts_with(['.', '-'])
        && event_type
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(StoreError::InvalidInput {
            field: "event_type",
            message: format!(
                "`{event_type}`: 1 to 128 of letters, digits, `_`, `.` and `-`, not starting with `.` or `-`"
            ),
        })
    }
}

/// Checks a filter: 1 to 64 patterns, each `*`, an event type, or `prefix.*`.
pub(crate) fn validate_events(events: &[String]) -> Result<(), StoreError> {
    if events.is_empty() || events.len() > 64 {
        return Err(StoreError::InvalidInput {
            field: "events",
            message: format!("1 to 64 event type patterns, got {}", events.len()),
        });
    }
    for pattern in events {
        let base = pattern.strip_suffix(".*").unwrap_or(pattern);
        if pattern != "*" && validate_event_type(base).is_err() {
            return Err(StoreError::InvalidInput {
                field: "events",
                message: format!(
                    "pattern `{pattern}`: use `*`, an event type (`invoice.paid`) or a prefix (`invoice.*`)"
                ),
            });
        }
    }
    Ok(())
}

/// Checks a URL's shape: `http(s)://…`, at most [`MAX_URL_LEN`]; whether its destination
/// may be reached is the egress connector's call at send time.
pub(crate) fn validate_url(url: &str) -> Result<(), StoreError> {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    let shaped = (lower.starts_with("http://") || lower.starts_with("https://"))
        && url.len() <= MAX_URL_LEN
        && !url.chars().any(|c| c.is_whitespace() || c.is_control());
    // Credentials in a URL would be stored and shown in clear: refuse them.
    let authority = url.split_once("://").map_or("", |(_, rest)| {
        rest.split(['/', '?', '#']).next().unwrap_or("")
    });
    if shaped && authority.contains('@') {
        return Err(StoreError::InvalidInput {
            field: "url",
            message: "credentials (`user:password@`) are not allowed in a webhook URL; the receiver checks the signature instead".into(),
        });
    }
    if shaped && authority.is_empty() {
        return Err(StoreError::InvalidInput {
            field: "url",
            message: format!(
                "`{}` has no host",
                url.chars().take(100).collect::<String>()
            ),
        });
    }
    if shaped {
        Ok(())
    } else {
        Err(StoreError::InvalidInput {
            field: "url",
            message: format!(
                "`{}`: an http:// or https:// URL of at most {MAX_URL_LEN} characters, without spaces",
                url.chars().take(100).collect::<String>()
            ),
        })
    }
}

pub(crate) fn schedule_ms(schedule: Option<&[Duration]>) -> Result<Option<Vec<i64>>, StoreError> {
    let Some(schedule) = schedule else {
        return Ok(None);
    };
    if schedule.len() > MAX_RETRY_STEPS {
        return Err(StoreError::InvalidInput {
            field: "retry_schedule",
            message: format!("at most {MAX_RETRY_STEPS} retries, got {}", schedule.len()),
        });
    }
    if let Some(step) = schedule.iter().find(|s| **s > MAX_RETRY_STEP) {
        return Err(StoreError::InvalidInput {
            field: "retry_schedule",
            message: format!("{step:?} is longer than 7 days"),
        });
    }
    Ok(Some(
        schedule.iter().map(|s| s.as_millis() as i64).collect(),
    ))
}

pub(crate) fn timeout_ms(timeout: Option<Duration>) -> Result<Option<i32>, StoreError> {
    match timeout {
        None => Ok(None),
        Some(t) if (MIN_WEBHOOK_TIMEOUT..=MAX_WEBHOOK_TIMEOUT).contains(&t) => {
            Ok(Some(t.as_millis() as i32))
        }
        Some(t) => Err(StoreError::InvalidInput {
            field: "timeout",
            message: format!("{t:?}: between 100 ms and 5 min"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_take_star_types_and_prefixes_only() {
        let ok = |p: &[&str]| validate_events(&p.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert!(ok(&["*"]).is_ok());
        assert!(ok(&["invoice.paid", "invoice.*", "user_created"]).is_ok());
        for bad in [
            &[][..],
            &["inv*"],
            &["*.paid"],
            &["a b"],
            &[".x"],
            &["invoice.**"],
        ] {
            assert!(ok(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn urls_must_be_http_or_https_and_endpoint_ids_take_the_prefix() {
        assert!(validate_url("https://example.com/hook").is_ok());
        assert!(
            validate_url("HTTP://10.0.0.1/x").is_ok(),
            "destinations are judged at send time"
        );
        for bad in [
            "ftp://x",
            "example.com",
            "https://a b",
            "javascript:alert(1)",
            "https://user:secret@example.com/hook",
            "https:///hook",
        ] {
            assert!(validate_url(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_endpoint_id("ep_12").unwrap(), 12);
        assert_eq!(parse_endpoint_id("12").unwrap(), 12);
        assert!(parse_endpoint_id("ep_x").is_err());
        assert!(parse_endpoint_id("0").is_err());
    }
}
