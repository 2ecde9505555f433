//! Firing due schedule slots, exactly once, from any number of hosts at the same time.
//!
//! Owns: the firing transaction. One transaction locks a batch of due schedules
//! (`FOR UPDATE SKIP LOCKED`: a schedule another host is firing is skipped, never
//! waited for), plans each one's slots in Rust (croner, against the transaction's
//! `now()`), and per schedule runs one statement that inserts the jobs, one
//! `schedule_slots` row per job (primary key `(schedule_id, slot)`), advances
//! `next_slot` past every slot it handled, adds to the counters and sends the NOTIFY
//! enqueue sends. The commit publishes all of it at once; a host that locks the row
//! afterwards sees the new `next_slot`, and a duplicate slot row would abort the whole
//! transaction rather than enqueue twice.
//!
//! Must not: enqueue outside that transaction, or wait on a lock another host holds.

use chrono::{DateTime, Utc};

use super::slots::{self, jitter_offset, parse_cron, parse_tz};
use crate::{Store, StoreError};

/// What one call to [`Store::fire_due_schedules`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FireReport {
    /// The clock the slots were decided against (the database's `now()`, or the `as_of`
    /// given).
    pub now: Option<DateTime<Utc>>,
    /// Schedules this call locked and handled.
    pub schedules: u32,
    /// Jobs enqueued (one per fired slot), in id order.
    pub job_ids: Vec<i64>,
    /// Due slots that did not run (catch-up policy, or a job type that is gone).
    pub skipped: u64,
    /// True when the batch was full: more schedules may be due, call again.
    pub more: bool,
}

#[derive(sqlx::FromRow)]
struct DueSchedule {
    id: i64,
    cron: String,
    tz: String,
    jitter_ms: i64,
    #[sqlx(try_from = "String")]
    catch_up: slots::CatchUp,
    max_catch_up: i32,
    next_slot: DateTime<Utc>,
    now: DateTime<Utc>,
}

/// Due schedules of every tenant, oldest slot first; rows another host holds are skipped.
/// `$1` overrides `now()` (a simulated clock for tests and tools).
const LOCK_DUE: &str = include_str!("../../sql/schedules/lock_due.sql");

/// One locked schedule: inserts its planned slots' jobs and slot rows, advances it and
/// notifies, in one statement (see the file's header for the parameters).
const FIRE_ONE: &str = include_str!("../../sql/schedules/fire_one.sql");

/// A stored expression that no longer parses (written by hand, or a croner upgrade
/// that became stricter): the schedule stops, with the reason in `last_error`.
const STOP_BROKEN: &str = include_str!("../../sql/schedules/stop_broken.sql");

impl Store {
    /// Fires every due slot of up to `batch` schedules, by the database's clock. Safe to
    /// call from any number of hosts at once: each slot enqueues exactly one job.
    #[tracing::instrument(name = "store.fire_due_schedules", level = "debug", skip(self))]
    pub async fn fire_due_schedules(&self, batch: u32) -> Result<FireReport, StoreError> {
        self.fire_due(None, batch).await
    }

    /// Like [`Store::fire_due_schedules`], deciding which slots are due against `now`
    /// instead of the database's clock: a simulated clock for tests and tools. Jobs
    /// still run at their slot (plus jitter) in real database time.
    pub async fn fire_due_schedules_as_of(
        &self,
        now: DateTime<Utc>,
        batch: u32,
    ) -> Result<FireReport, StoreError> {
        self.fire_due(Some(now), batch).await
    }

    async fn fire_due(
        &self,
        as_of: Option<DateTime<Utc>>,
        batch: u32,
    ) -> Result<FireReport, StoreError> {
        let batch = batch.clamp(1, 10_000);
        let mut tx = self.pool.begin().await?;
        let due: Vec<DueSchedule> = sqlx::query_as(LOCK_DUE)
            .bind(as_of)
            .bind(i64::from(batch))
            .fetch_all(&mut *tx)
            .await?;
        let mut report = FireReport {
            now: due.first().map(|d| d.now),
            more: due.len() as u32 == batch,
            ..FireReport::default()
        };
        for schedule in &due {
            let (cron, tz) =
                match parse_cron(&schedule.cron).and_then(|c| Ok((c, parse_tz(&schedule.tz)?))) {
                    Ok(parsed) => parsed,
                    Err(error) => {
                        sqlx::query(STOP_BROKEN)
                            .bind(schedule.id)
                            .bind(format!("stopped: {error}"))
                            .execute(&mut *tx)
                            .await?;
                        continue;
                    }
                };
            let plan = slots::plan(
                &cron,
                tz,
                schedule.next_slot,
                schedule.now,
                schedule.catch_up,
                schedule.max_catch_up.max(1) as u32,
            );
            let run_at: Vec<DateTime<Utc>> = plan
                .fire
                .iter()
                .map(|&slot| slot + jitter_offset(schedule.id, slot, schedule.jitter_ms))
                .collect();
            let (job_ids, _updated): (Option<Vec<i64>>, i64) = sqlx::query_as(FIRE_ONE)
                .bind(schedule.id)
                .bind(&plan.fire)
                .bind(&run_at)
                .bind(plan.next_slot)
                .bind(plan.skipped as i64)
                .bind(self.default_max_payload_bytes)
                .fetch_one(&mut *tx)
                .await?;
            let job_ids = job_ids.unwrap_or_default();
            report.skipped += plan.skipped + (plan.fire.len() - job_ids.len()) as u64;
            report.job_ids.extend(job_ids);
            report.schedules += 1;
        }
        tx.commit().await?;
        report.job_ids.sort_unstable();
        Ok(report)
    }
}
