//! Cron schedules: create, list, show, pause, resume, delete (this file), firing due
//! slots exactly once across any number of hosts (`fire`) and an operator's extra run
//! outside the slots (`run_now`).
//!
//! Owns: every statement on `sluice.schedules` and `sluice.schedule_slots`. Must not:
//! read a host clock (slots are decided against the database's `now()`), or enqueue a
//! scheduled job outside the transaction that records its slot.

mod fire;
mod run_now;
mod slots;

use std::time::Duration;

use chrono::{DateTime, Utc};

pub use fire::FireReport;
pub use slots::{CatchUp, ON_TIME_GRACE, next_slot_after, parse_cron, parse_tz, time_zone_names};

use crate::validate::{validate_job_type_name, validate_tenant_id};
use crate::{Store, StoreError, text};

/// Default of [`NewSchedule::max_catch_up`].
pub const DEFAULT_MAX_CATCH_UP: u32 = 10;

/// A schedule to create. Build with [`NewSchedule::new`] and set the public fields.
#[derive(Clone, Debug, PartialEq)]
pub struct NewSchedule {
    /// The tenant that will own the schedule and its jobs; must exist.
    pub tenant: String,
    /// Unique per tenant; 1 to 128 characters.
    pub name: String,
    /// 5 fields, or 6 with seconds first (see [`parse_cron`]).
    pub cron: String,
    /// IANA time zone the expression is evaluated in; default `UTC`.
    pub tz: String,
    /// The tenant's job type every slot enqueues; checked again at each firing.
    pub job_type: String,
    /// Payload of every job (JSON by convention).
    pub payload: Vec<u8>,
    /// Priority of every job (see [`crate::priority`]); default medium.
    pub priority: i32,
    /// `None`: the job type's.
    pub max_attempts: Option<i32>,
    /// Each job runs at its slot plus a deterministic offset in `[0, jitter]`
    /// (millisecond precision).
    pub jitter: Duration,
    /// What happens to slots missed while no scheduler ran; default [`CatchUp::Latest`].
    pub catch_up: CatchUp,
    /// With [`CatchUp::All`]: how many missed slots run at most (default 10).
    pub max_catch_up: u32,
}

impl NewSchedule {
    /// A schedule in UTC with an empty JSON object payload, medium priority, no jitter
    /// and catch-up `latest`.
    pub fn new(
        tenant: impl Into<String>,
        name: impl Into<String>,
        cron: impl Into<String>,
        job_type: impl Into<String>,
    ) -> Self {
        NewSchedule {
            tenant: tenant.into(),
            name: name.into(),
            cron: cron.into(),
            tz: "UTC".into(),
            job_type: job_type.into(),
            payload: b"{}".to_vec(),
            priority: crate::priority::MEDIUM,
            max_attempts: None,
            jitter: Duration::ZERO,
            catch_up: CatchUp::default(),
            max_catch_up: DEFAULT_MAX_CATCH_UP,
        }
    }
}

/// A stored schedule with its firing state and counters.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct ScheduleRecord {
    /// The schedule's id (`sluice.schedules.id`).
    pub id: i64,
    /// The tenant that owns it and its jobs.
    pub tenant: String,
    /// Its name, unique within the tenant: how it is addressed.
    pub name: String,
    /// The cron expression as given (5 fields, or 6 with seconds first).
    pub cron: String,
    /// The IANA time zone the expression is evaluated in.
    pub tz: String,
    /// The job type every slot enqueues.
    pub job_type: String,
    /// The payload of every job.
    pub payload: Vec<u8>,
    /// The priority of every job.
    pub priority: i32,
    /// Attempts of each job; `None`: the job type's.
    pub max_attempts: Option<i32>,
    /// Each job runs at its slot plus a deterministic offset in `[0, jitter_ms]`
    /// milliseconds.
    pub jitter_ms: i64,
    /// What happens to slots missed while no scheduler ran.
    #[sqlx(try_from = "String")]
    pub catch_up: CatchUp,
    /// With [`CatchUp::All`]: how many missed slots fire at most.
    pub max_catch_up: i32,
    /// True while paused (`pause_schedule`): no slot fires until `resume_schedule`.
    pub paused: bool,
    /// The earliest slot not yet fired or skipped (`None`: never again).
    pub next_slot: Option<DateTime<Utc>>,
    /// The latest slot that enqueued a job (without jitter); `None` if none has.
    pub last_fired_slot: Option<DateTime<Utc>>,
    /// Slots that enqueued a job.
    pub fired_count: i64,
    /// Slots that came due but did not run (the missed-slots metric).
    pub skipped_count: i64,
    /// Why the last slot could not enqueue (cleared by the next success).
    pub last_error: Option<String>,
    /// When the schedule was created.
    pub created_at: DateTime<Utc>,
    /// When it was last fired, paused or resumed.
    pub updated_at: DateTime<Utc>,
}

/// `ON CONFLICT DO NOTHING`: a taken name returns no row.
const INSERT_SCHEDULE: &str = include_str!("../../sql/schedules/insert.sql");
const GET_SCHEDULE: &str = include_str!("../../sql/schedules/get.sql");
const LIST_SCHEDULES: &str = include_str!("../../sql/schedules/list.sql");
const PAUSE_SCHEDULE: &str = include_str!("../../sql/schedules/pause.sql");
/// Guarded on `paused`: resuming a running schedule changes nothing.
const RESUME_SCHEDULE: &str = include_str!("../../sql/schedules/resume.sql");
const DELETE_SCHEDULE: &str = include_str!("../../sql/schedules/delete.sql");
const NEXT_SCHEDULE_DUE: &str = include_str!("../../sql/schedules/next_due.sql");
const PRUNE_SLOTS: &str = include_str!("../../sql/schedules/prune_slots.sql");
const DB_NOW: &str = include_str!("../../sql/db_now.sql");

fn invalid(field: &'static str, message: String) -> StoreError {
    StoreError::InvalidInput { field, message }
}

/// The longest cron expression stored (`schedules_cron_length`, migration 0006).
pub const MAX_CRON_CHARS: usize = 256;
/// The longest jitter of a schedule's jobs.
pub const MAX_JITTER: Duration = Duration::from_secs(7 * 24 * 3600);
/// The most missed slots one firing of a `catch_up = all` schedule runs.
pub const MAX_CATCH_UP: u32 = 100_000;

/// Everything about a new schedule that can be checked without the database.
fn validate(spec: &NewSchedule) -> Result<(), StoreError> {
    validate_tenant_id(&spec.tenant).map_err(|_| StoreError::UnknownTenant(spec.tenant.clone()))?;
    let n = spec.name.chars().count();
    if n == 0 || n > 128 {
        return Err(invalid(
            "name",
            format!("a schedule name must be 1 to 128 characters, got {n}"),
        ));
    }
    text::check("name", &spec.name)?;
    validate_job_type_name(&spec.job_type)?;
    if i16::try_from(spec.priority).is_err() {
        return Err(invalid(
            "priority",
            format!(
                "{} is outside {}..={}; use the labels low=0, medium=10, high=20, critical=30",
                spec.priority,
                i16::MIN,
                i16::MAX
            ),
        ));
    }
    if let Some(n) = spec.max_attempts
        && n < 1
    {
        return Err(invalid(
            "max_attempts",
            format!("must be at least 1 (1 means never retried), got {n}"),
        ));
    }
    // The stored (trimmed) expression is held to 1..=256 characters by a CHECK: say so
    // here, naming the field, rather than let the insert fail.
    let cron_chars = spec.cron.trim().chars().count();
    if cron_chars == 0 || cron_chars > MAX_CRON_CHARS {
        return Err(invalid(
            "cron",
            format!("a cron expression must be 1 to {MAX_CRON_CHARS} characters, got {cron_chars}"),
        ));
    }
    if spec.max_catch_up < 1 || spec.max_catch_up > MAX_CATCH_UP {
        return Err(invalid(
            "max_catch_up",
            format!("must be 1 to {MAX_CATCH_UP}, got {}", spec.max_catch_up),
        ));
    }
    if spec.jitter > MAX_JITTER {
        return Err(invalid(
            "jitter",
            format!("{:?} is longer than a week", spec.jitter),
        ));
    }
    Ok(())
}

impl Store {
    /// Creates a schedule. Refuses, naming the problem and writing nothing: an invalid
    /// cron expression, an unknown time zone, an expression that never matches, an
    /// unknown tenant or job type, a payload over the tenant's limit, a taken name.
    /// The first slot is the first one after the database's `now()`.
    pub async fn create_schedule(&self, spec: &NewSchedule) -> Result<ScheduleRecord, StoreError> {
        validate(spec)?;
        let cron = parse_cron(&spec.cron)?;
        let tz = parse_tz(&spec.tz)?;
        let tenant = self
            .get_tenant(&spec.tenant)
            .await?
            .ok_or_else(|| StoreError::UnknownTenant(spec.tenant.clone()))?;
        if self
            .get_job_type(&spec.tenant, &spec.job_type)
            .await?
            .is_none()
        {
            return Err(StoreError::UnknownJobType {
                tenant: spec.tenant.clone(),
                job_type: spec.job_type.clone(),
            });
        }
        let limit = tenant
            .limits
            .max_payload_bytes
            .map_or(self.default_max_payload_bytes, i64::from);
        if spec.payload.len() as i64 > limit {
            return Err(StoreError::PayloadTooLarge {
                size: spec.payload.len() as i64,
                limit,
            });
        }
        let now = self.db_now().await?;
        let first = slots::next_slot_after(&cron, tz, now).ok_or_else(|| {
            invalid(
                "cron",
                format!("{:?} never matches a future time", spec.cron),
            )
        })?;
        let jitter_ms = i64::try_from(spec.jitter.as_millis()).unwrap_or(i64::MAX);
        let row: Option<ScheduleRecord> = sqlx::query_as(INSERT_SCHEDULE)
            .bind(&spec.tenant)
            .bind(&spec.name)
            .bind(spec.cron.trim())
            .bind(tz.name())
            .bind(&spec.job_type)
            .bind(&spec.payload)
            .bind(spec.priority as i16) // validated
            .bind(spec.max_attempts)
            .bind(jitter_ms)
            .bind(spec.catch_up.as_str())
            .bind(spec.max_catch_up as i32) // validated
            .bind(first)
            .fetch_optional(&self.pool)
            .await?;
        row.ok_or_else(|| StoreError::Conflict {
            field: "name",
            message: format!(
                "schedule {:?} already exists for tenant {:?}: delete it first or pick another name",
                spec.name, spec.tenant
            ),
        })
    }

    /// One schedule by tenant and name.
    pub async fn get_schedule(
        &self,
        tenant: &str,
        name: &str,
    ) -> Result<Option<ScheduleRecord>, StoreError> {
        if !text::findable(tenant) || !text::findable(name) {
            return Ok(None);
        }
        Ok(sqlx::query_as(GET_SCHEDULE)
            .bind(tenant)
            .bind(name)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Schedules of one tenant (or of all), by tenant and name. Their `skipped_count`
    /// and `fired_count` are what a metrics exporter reports.
    pub async fn list_schedules(
        &self,
        tenant: Option<&str>,
    ) -> Result<Vec<ScheduleRecord>, StoreError> {
        if !tenant.is_none_or(text::findable) {
            return Ok(Vec::new());
        }
        Ok(sqlx::query_as(LIST_SCHEDULES)
            .bind(tenant)
            .fetch_all(&self.pool)
            .await?)
    }

    /// Stops a schedule from firing (idempotent). Slots that pass while paused are
    /// neither fired nor counted as skipped.
    pub async fn pause_schedule(
        &self,
        tenant: &str,
        name: &str,
    ) -> Result<ScheduleRecord, StoreError> {
        if !text::findable(tenant) || !text::findable(name) {
            return Err(schedule_not_found(tenant, name));
        }
        let row: Option<ScheduleRecord> = sqlx::query_as(PAUSE_SCHEDULE)
            .bind(tenant)
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        row.ok_or_else(|| schedule_not_found(tenant, name))
    }

    /// Resumes a paused schedule from its first slot after the database's `now()`
    /// (idempotent: resuming an active schedule changes nothing).
    pub async fn resume_schedule(
        &self,
        tenant: &str,
        name: &str,
    ) -> Result<ScheduleRecord, StoreError> {
        let current = self
            .get_schedule(tenant, name)
            .await?
            .ok_or_else(|| schedule_not_found(tenant, name))?;
        if !current.paused {
            return Ok(current);
        }
        let cron = parse_cron(&current.cron)?;
        let tz = parse_tz(&current.tz)?;
        let next = slots::next_slot_after(&cron, tz, self.db_now().await?);
        let row: Option<ScheduleRecord> = sqlx::query_as(RESUME_SCHEDULE)
            .bind(tenant)
            .bind(name)
            .bind(next)
            .fetch_optional(&self.pool)
            .await?;
        match row {
            Some(row) => Ok(row),
            // Resumed (or deleted) by someone else in between.
            None => self
                .get_schedule(tenant, name)
                .await?
                .ok_or_else(|| schedule_not_found(tenant, name)),
        }
    }

    /// Deletes a schedule and its slot records; jobs it already enqueued stay.
    pub async fn delete_schedule(&self, tenant: &str, name: &str) -> Result<(), StoreError> {
        if !text::findable(tenant) || !text::findable(name) {
            return Err(schedule_not_found(tenant, name));
        }
        let deleted = sqlx::query(DELETE_SCHEDULE)
            .bind(tenant)
            .bind(name)
            .execute(&self.pool)
            .await?
            .rows_affected();
        if deleted == 0 {
            return Err(schedule_not_found(tenant, name));
        }
        Ok(())
    }

    /// How long until the earliest active schedule's next slot (zero when one is due
    /// now), by the database's clock; `None` when no active schedule has a next slot.
    pub async fn next_schedule_due_in(&self) -> Result<Option<Duration>, StoreError> {
        let micros: Option<i64> = sqlx::query_scalar(NEXT_SCHEDULE_DUE)
            .fetch_one(&self.pool)
            .await?;
        Ok(micros.map(|us| Duration::from_micros(us.max(0) as u64)))
    }

    /// Deletes slot records older than `older_than` (by when they fired), at most
    /// `batch` per statement, until a batch comes back short. Returns the rows deleted.
    /// The records only matter while their slot could still be fired again, which
    /// `next_slot` already rules out; they are kept for inspection.
    pub async fn prune_schedule_slots(
        &self,
        older_than: Duration,
        batch: u32,
    ) -> Result<u64, StoreError> {
        let age = crate::micros("older_than", older_than, false)?;
        let mut total = 0;
        loop {
            let n = sqlx::query(PRUNE_SLOTS)
                .bind(age)
                .bind(i64::from(batch.max(1)))
                .execute(&self.pool)
                .await?
                .rows_affected();
            total += n;
            if n < u64::from(batch.max(1)) {
                return Ok(total);
            }
        }
    }

    /// The database's clock.
    pub(crate) async fn db_now(&self) -> Result<DateTime<Utc>, StoreError> {
        Ok(sqlx::query_scalar(DB_NOW).fetch_one(&self.pool).await?)
    }
}

fn schedule_not_found(tenant: &str, name: &str) -> StoreError {
    StoreError::NotFound {
        entity: "schedule",
        id: format!("{name:?} of tenant {tenant:?}"),
    }
}
