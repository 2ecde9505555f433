//! Running a schedule's job now, outside its cron slots (the dashboard's "run now").
//!
//! Owns: [`Store::run_schedule_now`]. Must not: touch the schedule's slot bookkeeping
//! (`next_slot`, `last_fired_slot`, the counters, `schedule_slots`): the job is an
//! operator's extra run, not a fired slot, so the next slot still fires as planned.

use super::schedule_not_found;
use crate::enqueue::NewJob;
use crate::{Store, StoreError};

impl Store {
    /// Enqueues one job from the schedule's spec (job type, payload, priority,
    /// max_attempts), due now, through the store's one enqueue path
    /// (`sluice.enqueue_jobs`). Works on a paused schedule too (an explicit operator
    /// action). Returns the new job's id. An unknown schedule is `NotFound` naming it;
    /// the enqueue's own refusals (a job type deleted since, a payload over a lowered
    /// limit) come back as they do from [`Store::enqueue`].
    pub async fn run_schedule_now(&self, tenant: &str, name: &str) -> Result<i64, StoreError> {
        let schedule = self
            .get_schedule(tenant, name)
            .await?
            .ok_or_else(|| schedule_not_found(tenant, name))?;
        let mut job = NewJob::new(schedule.tenant, schedule.job_type, schedule.payload)
            .with_priority(schedule.priority);
        job.max_attempts = schedule.max_attempts;
        Ok(self.enqueue(&job).await?.id)
    }
}
