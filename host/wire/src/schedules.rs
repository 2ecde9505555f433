//! How a schedule looks in JSON ([`ScheduleView`]: every `/v1/schedules` answer and
//! `sluice schedules create|list|show|pause|resume --json`): the stored schedule with its
//! firing state and counters, the payload as the text it was given, the jitter in
//! milliseconds and the catch-up policy by name.
//!
//! Owns: this shape and its conversion from `sluice_store::ScheduleRecord`. Must not: read
//! or write anything.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sluice_store::ScheduleRecord;
use utoipa::ToSchema;

use super::schemas;

/// A schedule with its next slot and counters.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = Schedule)]
pub struct ScheduleView {
    /// The schedule's id (`sluice.schedules.id`).
    #[schema(minimum = 1)]
    pub id: i64,
    /// The tenant that owns the schedule and its jobs.
    pub tenant: String,
    /// The schedule's name, unique within its tenant; the API and the CLI address it by
    /// name.
    #[schema(min_length = 1, max_length = 128)]
    pub name: String,
    /// The cron expression, as given.
    pub cron: String,
    /// IANA time zone of the expression.
    pub tz: String,
    /// The job type every slot enqueues.
    #[schema(min_length = 1, max_length = 128)]
    pub job_type: String,
    /// The payload of every job, as text (the JSON given at creation).
    pub payload: String,
    /// Priority of every job it enqueues (higher is claimed first).
    #[schema(minimum = -32768, maximum = 32767)]
    pub priority: i32,
    /// Attempts of each job (null: the job type's).
    #[schema(required = true, minimum = 1)]
    pub max_attempts: Option<i32>,
    /// Each job runs at its slot plus a fixed offset from 0 to this many milliseconds, the
    /// same for a given slot on every host.
    #[schema(minimum = 0)]
    pub jitter_ms: i64,
    /// What to do with slots missed while no scheduler ran: `none` skips them, `latest`
    /// fires the newest once, `all` fires up to `max_catch_up` of them.
    #[schema(schema_with = schemas::catch_up)]
    pub catch_up: String,
    /// With catch-up `all`: the most missed slots fired at once (the older ones are
    /// skipped).
    #[schema(minimum = 1)]
    pub max_catch_up: i32,
    /// True while paused: no slot fires; resuming starts again from the next slot after the
    /// resume.
    pub paused: bool,
    /// The earliest slot not yet fired or skipped (null: never again).
    #[schema(required = true)]
    pub next_slot: Option<DateTime<Utc>>,
    /// The latest slot that enqueued a job (the slot's time, without jitter); null if none
    /// has.
    #[schema(required = true)]
    pub last_fired_slot: Option<DateTime<Utc>>,
    /// Slots that enqueued a job.
    #[schema(minimum = 0)]
    pub fired_count: i64,
    /// Slots that came due but did not run.
    #[schema(minimum = 0)]
    pub skipped_count: i64,
    /// Why the last slot could not enqueue (cleared by the next success).
    #[schema(required = true)]
    pub last_error: Option<String>,
    /// When the schedule was created.
    pub created_at: DateTime<Utc>,
    /// When it was last changed: fired, skipped, paused or resumed.
    pub updated_at: DateTime<Utc>,
}

impl From<ScheduleRecord> for ScheduleView {
    fn from(s: ScheduleRecord) -> Self {
        ScheduleView {
            id: s.id,
            tenant: s.tenant,
            name: s.name,
            cron: s.cron,
            tz: s.tz,
            job_type: s.job_type,
            payload: String::from_utf8_lossy(&s.payload).into_owned(),
            priority: s.priority,
            max_attempts: s.max_attempts,
            jitter_ms: s.jitter_ms,
            catch_up: s.catch_up.as_str().to_owned(),
            max_catch_up: s.max_catch_up,
            paused: s.paused,
            next_slot: s.next_slot,
            last_fired_slot: s.last_fired_slot,
            fired_count: s.fired_count,
            skipped_count: s.skipped_count,
            last_error: s.last_error,
            created_at: s.created_at,
            updated_at: s.updated_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use sluice_store::CatchUp;

    use super::*;
    use crate::schemas::tests::{keys, properties};

    #[test]
    fn the_schedule_schema_names_exactly_the_fields_a_schedule_serialises() {
        let now = Utc::now();
        let record = ScheduleRecord {
            id: 1,
            tenant: "acme".into(),
            name: "nightly".into(),
            cron: "0 3 * * *".into(),
            tz: "UTC".into(),
            job_type: "report".into(),
            payload: b"{}".to_vec(),
            priority: 10,
            max_attempts: None,
            jitter_ms: 0,
            catch_up: CatchUp::Latest,
            max_catch_up: 10,
            paused: false,
            next_slot: Some(now),
            last_fired_slot: None,
            fired_count: 0,
            skipped_count: 0,
            last_error: None,
            created_at: now,
            updated_at: now,
        };
        let value = serde_json::to_value(ScheduleView::from(record)).unwrap();
        assert_eq!(keys(&value), properties::<ScheduleView>());
        assert_eq!(value["catch_up"], "latest");
        assert_eq!(value["payload"], "{}");
    }
}
