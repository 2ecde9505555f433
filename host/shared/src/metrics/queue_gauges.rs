//! The queue gauges: refreshed from [`Store::stats`] at most once per cache lifetime (one
//! refresh at a time however many scrapers call), folded into the label budget.
//!
//! Owns: when and how the gauges are refreshed. Must not: serve HTTP (`sluice-http`'s
//! `scrape` does) or query the database on every scrape.

use std::collections::HashMap;
use std::time::Duration;

use sluice_store::{JobState, Stats, Store};
use tracing::warn;

use super::{HeldLabels, JobLabels, Metrics, StateLabels};

/// How long queue gauges read from the database are reused by later scrapes.
pub const DEFAULT_STATS_TTL: Duration = Duration::from_secs(5);

/// A refresh that takes longer than this is abandoned (the gauges keep their values and
/// `sluice_queue_stats_up` drops to 0).
const STATS_TIMEOUT: Duration = Duration::from_secs(5);

impl Metrics {
    /// Reads [`Store::stats`] for every tenant into the queue gauges, unless the last
    /// refresh is younger than the cache lifetime. Never fails: on a database error the
    /// gauges keep their last values and `sluice_queue_stats_up` is 0.
    pub async fn refresh_queue_gauges(&self, store: &Store) {
        let mut refreshed = self.inner.refreshed.lock().await;
        if refreshed.is_some_and(|at| at.elapsed() < self.inner.stats_ttl) {
            return;
        }
        match tokio::time::timeout(STATS_TIMEOUT, store.stats(None)).await {
            Ok(Ok(stats)) => {
                self.set_queue_gauges(&stats);
                self.f().stats_up.set(1);
                *refreshed = Some(tokio::time::Instant::now());
            }
            Ok(Err(error)) => {
                warn!(%error, "cannot refresh queue gauges from the database");
                self.f().stats_up.set(0);
            }
            Err(_) => {
                warn!("refreshing queue gauges took over {STATS_TIMEOUT:?}; gave up");
                self.f().stats_up.set(0);
            }
        }
    }

    /// Replaces every queue gauge with `stats` (folding pairs over the label budget into
    /// `_other`: counts add up, the oldest age is the maximum).
    fn set_queue_gauges(&self, stats: &Stats) {
        #[derive(Default)]
        struct Folded {
            counts: [i64; JobState::ALL.len()],
            ready: i64,
            held: [i64; 5],
            oldest: Option<f64>,
            expirations: i64,
        }
        let mut folded: HashMap<JobLabels, Folded> = HashMap::new();
        for t in &stats.types {
            let entry = folded
                .entry(self.labels(&t.tenant, &t.job_type))
                .or_default();
            for (i, state) in JobState::ALL.into_iter().enumerate() {
                entry.counts[i] += t.counts.get(state);
            }
            entry.ready += t.counts.ready;
            let h = &t.held;
            for (i, n) in [h.paused, h.quota, h.type_cap, h.key_cap, h.rate]
                .into_iter()
                .enumerate()
            {
                entry.held[i] += n;
            }
            entry.expirations += t.lease_expirations_last_hour;
            entry.oldest = match (entry.oldest, t.oldest_ready_age_seconds) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
        }
        let f = self.f();
        f.queue_depth.clear();
        f.queue_ready.clear();
        f.queue_held.clear();
        f.oldest_ready_age.clear();
        f.lease_expirations_last_hour.clear();
        for (labels, v) in folded {
            for (i, state) in JobState::ALL.into_iter().enumerate() {
                f.queue_depth
                    .get_or_create(&StateLabels {
                        tenant: labels.tenant.clone(),
                        job_type: labels.job_type.clone(),
                        state: state.as_str().to_owned(),
                    })
                    .set(v.counts[i]);
            }
            f.queue_ready.get_or_create(&labels).set(v.ready);
            for (i, reason) in ["paused", "quota", "type_cap", "key_cap", "rate"]
                .into_iter()
                .enumerate()
            {
                f.queue_held
                    .get_or_create(&HeldLabels {
                        tenant: labels.tenant.clone(),
                        job_type: labels.job_type.clone(),
                        reason: reason.to_owned(),
                    })
                    .set(v.held[i]);
            }
            f.lease_expirations_last_hour
                .get_or_create(&labels)
                .set(v.expirations);
            if let Some(age) = v.oldest {
                f.oldest_ready_age.get_or_create(&labels).set(age);
            }
        }
    }
}
