//! Slot arithmetic for schedules: parsing cron expressions and time zones, finding the
//! slots that came due, applying the catch-up policy, and the per-slot jitter.
//!
//! Owns: every use of `croner` and `chrono-tz`. Must not: run SQL or read a clock — the
//! caller passes the database's `now()`.

use std::str::FromStr as _;
use std::time::Duration;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

use crate::StoreError;

/// A slot at most this late still fires under [`CatchUp::None`]: the scheduler's own lag
/// (a wake-up a few hundred milliseconds late, a busy database) is not downtime.
pub const ON_TIME_GRACE: Duration = Duration::from_secs(30);

/// At most this many due slots of one schedule are looked at per firing; a longer
/// backlog (a per-second schedule after a day of downtime) is skipped in chunks of this
/// size, and the schedule stays due until the chunk that reaches `now`.
pub(crate) const SCAN_LIMIT: usize = 10_000;

/// What happens to slots that came due while no scheduler ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CatchUp {
    /// Skip every missed slot; only a slot less than [`ON_TIME_GRACE`] late fires.
    None,
    /// Fire the most recent missed slot once; skip the older ones.
    #[default]
    Latest,
    /// Fire the most recent `max_catch_up` missed slots; skip the older ones.
    All,
}

impl CatchUp {
    /// The SQL/wire spelling: `none`, `latest`, `all`.
    pub fn as_str(self) -> &'static str {
        match self {
            CatchUp::None => "none",
            CatchUp::Latest => "latest",
            CatchUp::All => "all",
        }
    }
}

impl std::fmt::Display for CatchUp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for CatchUp {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" => Ok(CatchUp::None),
            "latest" => Ok(CatchUp::Latest),
            "all" => Ok(CatchUp::All),
            other => Err(format!(
                "unknown catch-up policy {other:?}: expected none, latest or all"
            )),
        }
    }
}

impl TryFrom<String> for CatchUp {
    type Error = String;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

/// Parses a cron expression: 5 fields (minute hour day-of-month month day-of-week), or 6
/// with seconds first. Nicknames (`@hourly`, `@daily`, …) and croner's extensions (`L`,
/// `#`, `W`) are accepted; a year field is not.
pub fn parse_cron(expression: &str) -> Result<Cron, StoreError> {
    let fields = expression.split_whitespace().count();
    if !expression.trim_start().starts_with('@') && !(5..=6).contains(&fields) {
        return Err(StoreError::InvalidInput {
            field: "cron",
            message: format!(
                "{expression:?} has {fields} fields: use 5 (minute hour day month weekday) or 6 (second first)"
            ),
        });
    }
    CronParser::builder()
        .seconds(Seconds::Optional)
        .year(Year::Disallowed)
        .build()
        .parse(expression)
        .map_err(|e| StoreError::InvalidInput {
            field: "cron",
            message: format!("{expression:?} is not a cron expression: {e}"),
        })
}

/// Every name [`parse_tz`] accepts (the IANA database chrono-tz carries), in its order.
pub fn time_zone_names() -> impl Iterator<Item = &'static str> {
    chrono_tz::TZ_VARIANTS.iter().map(|tz| tz.name())
}

/// Parses an IANA time zone name (`Europe/Paris`, `UTC`).
pub fn parse_tz(name: &str) -> Result<Tz, StoreError> {
    Tz::from_str(name).map_err(|_| StoreError::InvalidInput {
        field: "tz",
        message: format!(
            "unknown time zone {name:?}: use an IANA name such as UTC, Europe/Paris or America/New_York"
        ),
    })
}

/// The first slot strictly after `after`, or `None` when the expression never matches
/// again.
pub fn next_slot_after(cron: &Cron, tz: Tz, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
    cron.find_next_occurrence(&after.with_timezone(&tz), false)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// What one firing does with a schedule's due slots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SlotPlan {
    /// Slots that enqueue a job, oldest first.
    pub fire: Vec<DateTime<Utc>>,
    /// Slots that came due and do not run.
    pub skipped: u64,
    /// The first slot not handled by this plan (`None`: no slot ever again).
    pub next_slot: Option<DateTime<Utc>>,
}

/// Plans the slots from `next_slot` (inclusive) to `now` (inclusive) under `policy`.
pub(crate) fn plan(
    cron: &Cron,
    tz: Tz,
    next_slot: DateTime<Utc>,
    now: DateTime<Utc>,
    policy: CatchUp,
    max_catch_up: u32,
) -> SlotPlan {
    let mut due: Vec<DateTime<Utc>> = cron
        .iter_from(next_slot.with_timezone(&tz), croner::Direction::Forward)
        .map(|t| t.with_timezone(&Utc))
        .take_while(|t| *t <= now)
        .take(SCAN_LIMIT + 1)
        .collect();
    if due.len() > SCAN_LIMIT {
        // Not the end of the backlog: every slot of this chunk is older than the latest
        // due one, so none of them runs under any policy.
        let next = due.pop();
        return SlotPlan {
            fire: Vec::new(),
            skipped: due.len() as u64,
            next_slot: next,
        };
    }
    let next = next_slot_after(cron, tz, now);
    let keep = match policy {
        CatchUp::None => usize::from(
            due.last()
                .is_some_and(|last| (now - *last).to_std().unwrap_or_default() <= ON_TIME_GRACE),
        ),
        CatchUp::Latest => 1,
        CatchUp::All => max_catch_up.max(1) as usize,
    }
    .min(due.len());
    let fire = due.split_off(due.len() - keep);
    SlotPlan {
        fire,
        skipped: due.len() as u64,
        next_slot: next,
    }
}

/// The deterministic offset of a slot's job within `[0, jitter]`, in whole milliseconds:
/// the same schedule and slot always get the same offset (a retried firing or another
/// host computes the same `run_at`), and different slots spread across the window.
pub(crate) fn jitter_offset(schedule_id: i64, slot: DateTime<Utc>, jitter_ms: i64) -> Duration {
    if jitter_ms <= 0 {
        return Duration::ZERO;
    }
    // splitmix64 of (id, slot): cheap, well mixed, stable across versions and hosts.
    let mut x = (schedule_id as u64)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(slot.timestamp_micros() as u64);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    Duration::from_millis(x % (jitter_ms as u64 + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone as _;

    fn utc(h: u32, m: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 2, h, m, s).unwrap()
    }

    #[test]
    fn five_and_six_fields_parse_and_bad_ones_name_the_problem() {
        assert!(parse_cron("*/5 * * * *").is_ok());
        assert!(parse_cron("*/1 * * * * *").is_ok());
        assert!(parse_cron("@hourly").is_ok());
        let err = parse_cron("61 * * * *").unwrap_err().to_string();
        assert!(err.contains("cron") && err.contains("61 * * * *"), "{err}");
        let err = parse_cron("* * *").unwrap_err().to_string();
        assert!(err.contains("3 fields"), "{err}");
        let err = parse_tz("Mars/Olympus").unwrap_err().to_string();
        assert!(err.contains("Mars/Olympus"), "{err}");
    }

    #[test]
    fn seconds_slots_and_catch_up_policies() {
        let cron = parse_cron("*/10 * * * * *").unwrap();
        let tz = Tz::UTC;
        assert_eq!(
            next_slot_after(&cron, tz, utc(12, 0, 0)),
            Some(utc(12, 0, 10))
        );
        // On time: one slot due, it fires under every policy.
        for policy in [CatchUp::None, CatchUp::Latest, CatchUp::All] {
            let p = plan(&cron, tz, utc(12, 0, 10), utc(12, 0, 10), policy, 10);
            assert_eq!(p.fire, vec![utc(12, 0, 10)]);
            assert_eq!((p.skipped, p.next_slot), (0, Some(utc(12, 0, 20))));
        }
        // 12:00:10 .. 12:02:40 is 16 slots; the last is 5 s late, within the grace.
        let now = utc(12, 2, 45);
        let none = plan(&cron, tz, utc(12, 0, 10), now, CatchUp::None, 10);
        assert_eq!(
            (none.fire.clone(), none.skipped),
            (vec![utc(12, 2, 40)], 15)
        );
        let latest = plan(&cron, tz, utc(12, 0, 10), now, CatchUp::Latest, 10);
        assert_eq!(
            (latest.fire.clone(), latest.skipped),
            (vec![utc(12, 2, 40)], 15)
        );
        let all = plan(&cron, tz, utc(12, 0, 10), now, CatchUp::All, 10);
        assert_eq!(all.fire.len(), 10);
        assert_eq!(all.fire[0], utc(12, 1, 10));
        assert_eq!(all.skipped, 6);
        assert_eq!(all.next_slot, Some(utc(12, 2, 50)));

        // Minute slots, the latest 45 s late: `none` runs nothing.
        let minutes = parse_cron("* * * * *").unwrap();
        let none = plan(
            &minutes,
            tz,
            utc(12, 1, 0),
            utc(12, 5, 45),
            CatchUp::None,
            10,
        );
        assert_eq!((none.fire.len(), none.skipped), (0, 5));
        assert_eq!(none.next_slot, Some(utc(12, 6, 0)));
    }

    #[test]
    fn time_zones_shift_slots() {
        let cron = parse_cron("0 9 * * *").unwrap();
        let paris = parse_tz("Europe/Paris").unwrap();
        // 2 March: Paris is UTC+1, so 09:00 Paris is 08:00 UTC.
        assert_eq!(
            next_slot_after(&cron, paris, utc(0, 0, 0)),
            Some(utc(8, 0, 0))
        );
    }

    #[test]
    fn jitter_is_deterministic_and_bounded() {
        let a = jitter_offset(7, utc(12, 0, 0), 30_000);
        assert_eq!(a, jitter_offset(7, utc(12, 0, 0), 30_000));
        let offsets: Vec<Duration> = (0..50)
            .map(|i| jitter_offset(7, utc(12, i, 0), 30_000))
            .collect();
        assert!(offsets.iter().all(|d| *d <= Duration::from_secs(30)));
        assert!(offsets.iter().any(|d| *d != offsets[0]), "offsets spread");
        assert_eq!(jitter_offset(7, utc(12, 0, 0), 0), Duration::ZERO);
    }
}
