//! The prefetch queue, fair between tenants: [`FairQueue`] hands a freed slot the queued
//! job of the tenant that has the fewest jobs executing on this worker (ties: the job
//! claimed first), so a light tenant's prefetched job never waits behind a flood's
//! (issue #22). Within a tenant, jobs start in claim order (priority, then run_at).
//!
//! Pure bookkeeping: no I/O, no clock. Must not claim or start anything (`slots` does).

use std::collections::{HashMap, VecDeque};

use sluice_store::ClaimedJob;

/// Claimed jobs waiting for a slot, one FIFO per tenant.
#[derive(Default)]
pub(super) struct FairQueue {
    by_tenant: HashMap<String, VecDeque<(u64, ClaimedJob)>>,
    /// Jobs executing per tenant (only tenants with at least one).
    executing: HashMap<String, usize>,
    next_seq: u64,
    len: usize,
}

impl FairQueue {
    pub(super) fn push(&mut self, job: ClaimedJob) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.len += 1;
        self.by_tenant
            .entry(job.tenant.clone())
            .or_default()
            .push_back((seq, job));
    }

    /// The next job to start (and counts it as executing), or `None` when empty.
    pub(super) fn pop(&mut self) -> Option<ClaimedJob> {
        self.pop_within(usize::MAX)
    }

    /// The next job to start in a spare slot: the first claimed of a tenant with nothing
    /// executing here (`None` if no queued job is such a tenant's).
    pub(super) fn pop_idle(&mut self) -> Option<ClaimedJob> {
        self.pop_within(0)
    }

    /// The next job of a tenant executing at most `most` jobs here.
    fn pop_within(&mut self, most: usize) -> Option<ClaimedJob> {
        let tenant = self
            .by_tenant
            .iter()
            .filter_map(|(tenant, jobs)| {
                let (seq, _) = jobs.front()?;
                let running = self.executing.get(tenant).copied().unwrap_or(0);
                (running <= most).then_some((running, *seq, tenant))
            })
            .min()
            .map(|(_, _, tenant)| tenant.clone())?;
        let jobs = self.by_tenant.get_mut(&tenant)?;
        let (_, job) = jobs.pop_front()?;
        if jobs.is_empty() {
            self.by_tenant.remove(&tenant);
        }
        self.len -= 1;
        *self.executing.entry(tenant).or_default() += 1;
        Some(job)
    }

    /// A job of `tenant` that `pop` returned stopped executing.
    pub(super) fn finished(&mut self, tenant: &str) {
        if let Some(n) = self.executing.get_mut(tenant) {
            *n -= 1;
            if *n == 0 {
                self.executing.remove(tenant);
            }
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The tenants with at least one job executing here.
    pub(super) fn executing_tenants(&self) -> impl Iterator<Item = &String> {
        self.executing.keys()
    }

    /// The `n` jobs claimed last (or all, if fewer), taken out of the queue: the ones
    /// that would start last within their tenants, given back when the queue is deeper
    /// than it should be.
    pub(super) fn take_newest(&mut self, n: usize) -> Vec<ClaimedJob> {
        let mut seqs: Vec<u64> = self
            .by_tenant
            .values()
            .flat_map(|jobs| jobs.iter().map(|(seq, _)| *seq))
            .collect();
        seqs.sort_unstable_by(|a, b| b.cmp(a));
        let count = n.min(seqs.len());
        if count == 0 {
            return Vec::new();
        }
        let cut = seqs[count - 1];
        let mut taken = Vec::new();
        for jobs in self.by_tenant.values_mut() {
            // Within a tenant, sequence numbers grow from front to back.
            while jobs.back().is_some_and(|(seq, _)| *seq >= cut) {
                taken.extend(jobs.pop_back());
            }
        }
        self.by_tenant.retain(|_, jobs| !jobs.is_empty());
        self.len -= taken.len();
        taken.sort_by_key(|(seq, _)| *seq);
        taken.into_iter().map(|(_, job)| job).collect()
    }

    /// Every queued job, in claim order (for giving them back at shutdown).
    pub(super) fn drain(&mut self) -> Vec<ClaimedJob> {
        let mut all: Vec<(u64, ClaimedJob)> =
            self.by_tenant.drain().flat_map(|(_, jobs)| jobs).collect();
        all.sort_by_key(|(seq, _)| *seq);
        self.len = 0;
        all.into_iter().map(|(_, job)| job).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use sluice_store::Lease;
    use uuid::Uuid;

    fn job(id: i64, tenant: &str) -> ClaimedJob {
        ClaimedJob {
            id,
            tenant: tenant.into(),
            job_type: "t".into(),
            payload: Vec::new(),
            priority: 0,
            attempt: 1,
            max_attempts: 3,
            lease: Lease {
                job_id: id,
                token: Uuid::nil(),
            },
            locked_until: Utc::now(),
            trace: None,
            due_at: Utc::now(),
        }
    }

    fn ids(q: &mut FairQueue, n: usize) -> Vec<i64> {
        (0..n).filter_map(|_| q.pop().map(|j| j.id)).collect()
    }

    #[test]
    fn one_tenant_starts_in_claim_order() {
        let mut q = FairQueue::default();
        (1..=4).for_each(|i| q.push(job(i, "a")));
        assert_eq!(ids(&mut q, 5), vec![1, 2, 3, 4]);
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn a_light_tenant_queued_behind_a_flood_starts_next() {
        let mut q = FairQueue::default();
        (1..=100).for_each(|i| q.push(job(i, "flood")));
        // Eight slots busy with the flood.
        assert_eq!(ids(&mut q, 8), (1..=8).collect::<Vec<_>>());
        q.push(job(1000, "light"));
        // A slot frees: the light tenant (0 executing) goes before the flood (7).
        q.finished("flood");
        assert_eq!(ids(&mut q, 1), vec![1000]);
        // Then the flood resumes in order.
        q.finished("light");
        q.finished("flood");
        assert_eq!(ids(&mut q, 1), vec![9]);
        assert_eq!(q.len(), 91);
    }

    #[test]
    fn a_spare_slot_only_takes_a_tenant_with_nothing_executing() {
        let mut q = FairQueue::default();
        (1..=3).for_each(|i| q.push(job(i, "flood")));
        assert_eq!(q.pop().map(|j| j.id), Some(1));
        assert!(q.pop_idle().is_none(), "the flood executes here");
        q.push(job(10, "light"));
        q.push(job(11, "light"));
        assert_eq!(q.pop_idle().map(|j| j.id), Some(10));
        assert!(q.pop_idle().is_none(), "light executes here now");
        let mut executing: Vec<&String> = q.executing_tenants().collect();
        executing.sort();
        assert_eq!(executing, ["flood", "light"]);
        q.finished("light");
        assert_eq!(q.pop_idle().map(|j| j.id), Some(11));
        assert_eq!(q.len(), 2, "the flood's two are left for the regular slots");
    }

    #[test]
    fn tenants_alternate_and_ties_go_to_the_earlier_claim() {
        let mut q = FairQueue::default();
        for i in 0..3 {
            q.push(job(10 + i, "a"));
            q.push(job(20 + i, "b"));
        }
        assert_eq!(ids(&mut q, 6), vec![10, 20, 11, 21, 12, 22]);
    }

    #[test]
    fn take_newest_takes_the_last_claimed_across_tenants() {
        let mut q = FairQueue::default();
        q.push(job(1, "a"));
        q.push(job(2, "b"));
        q.push(job(3, "a"));
        q.push(job(4, "b"));
        q.push(job(5, "a"));
        let taken: Vec<i64> = q.take_newest(3).iter().map(|j| j.id).collect();
        assert_eq!(taken, vec![3, 4, 5]);
        assert_eq!(q.len(), 2);
        assert_eq!(ids(&mut q, 3), vec![1, 2]);
        assert!(q.take_newest(2).is_empty());
        q.push(job(6, "c"));
        assert_eq!(q.take_newest(0).len(), 0);
        assert_eq!(
            q.take_newest(9).iter().map(|j| j.id).collect::<Vec<_>>(),
            vec![6]
        );
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn drain_gives_everything_back_in_claim_order() {
        let mut q = FairQueue::default();
        q.push(job(3, "a"));
        q.push(job(1, "b"));
        q.push(job(2, "a"));
        assert_eq!(
            q.drain().iter().map(|j| j.id).collect::<Vec<_>>(),
            vec![3, 1, 2]
        );
        assert_eq!(q.len(), 0);
        assert!(q.pop().is_none());
        q.finished("nobody"); // a stray finish is harmless
    }
}
