//! Label sets of the Sluice metrics and the budget that keeps their cardinality bounded.
//!
//! Owns: which label values a metric may carry. Every per-job metric is labelled by
//! tenant and job type; a host admits at most `max_label_sets` distinct (tenant, job type)
//! pairs, in the order it first sees them, and folds every later pair into
//! `tenant="_other", job_type="_other"` (tenant ids cannot start with `_`, so the fold
//! never collides with a real tenant). Must not: record anything itself.

use std::collections::HashSet;
use std::sync::Mutex;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};

/// The label value that (tenant, job type) pairs over the budget are folded into.
pub const OTHER: &str = "_other";

/// Default for the number of distinct (tenant, job type) pairs a host exports.
pub const DEFAULT_MAX_LABEL_SETS: usize = 250;

/// `tenant` and `job_type`: the labels of every per-job metric.
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct JobLabels {
    /// The job's tenant id, or `_other` once the budget is spent.
    pub tenant: String,
    /// The job type's name, or `_other` once the budget is spent.
    pub job_type: String,
}

impl JobLabels {
    fn other() -> Self {
        JobLabels {
            tenant: OTHER.into(),
            job_type: OTHER.into(),
        }
    }
}

/// A job type's labels plus the job state (`sluice_queue_depth`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabels {
    /// The tenant id, or `_other` when the pair is folded.
    pub tenant: String,
    /// The job type's name, or `_other` when the pair is folded.
    pub job_type: String,
    /// The job state as stored: `pending`, `running`, `completed`, `dead` or `cancelled`.
    pub state: String,
}

/// A job type's labels plus the flow control holding jobs back (`sluice_queue_held`):
/// `paused`, `type_cap`, `key_cap` or `rate`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HeldLabels {
    /// The tenant.
    pub tenant: String,
    /// The job type.
    pub job_type: String,
    /// The flow control holding them: `paused`, `type_cap`, `key_cap` or `rate`.
    pub reason: String,
}

/// Which limit an attempt exceeded (`sluice_limit_violations_total`).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum LimitReason {
    /// The wall-clock timeout.
    timeout,
    /// The fuel (CPU) budget.
    fuel,
    /// The linear memory limit.
    memory,
    /// The table elements limit.
    table,
    /// The output size limit.
    output,
    /// A trap: stack overflow, `unreachable` (a guest panic), out-of-bounds access...
    trap,
}

/// A job type's labels plus the limit (`sluice_limit_violations_total`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ViolationLabels {
    pub tenant: String,
    pub job_type: String,
    pub reason: LimitReason,
}

/// One outbound HTTP request's result (`sluice_http_requests_total`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HttpLabels {
    pub tenant: String,
    pub job_type: String,
    /// `ok`, `denied`, `timeout` or `error`.
    pub outcome: String,
}

/// Bytes of outbound HTTP bodies (`sluice_http_body_bytes_total`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HttpBytesLabels {
    pub tenant: String,
    pub job_type: String,
    /// `out` (request bodies sent) or `in` (response bodies read).
    pub direction: String,
}

/// Which store call of the worker or a background service failed
/// (`sluice_worker_store_errors_total`).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum StoreOperation {
    /// The claim loop's `Store::claim` (it looks again on its next turn).
    claim,
    /// The lease heartbeat of the jobs a worker holds.
    heartbeat,
    /// The reaper taking back jobs whose lease expired.
    reap,
    /// The scheduler enqueuing the jobs of due schedules.
    fire_schedules,
    /// The retention service deleting finished jobs past their retention.
    prune,
}

/// `operation`: the label of `sluice_worker_store_errors_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OperationLabels {
    pub operation: StoreOperation,
}

/// Admits at most `max` distinct (tenant, job type) pairs; later ones fold into `_other`.
#[derive(Debug)]
pub struct LabelBudget {
    max: usize,
    admitted: Mutex<HashSet<JobLabels>>,
}

impl LabelBudget {
    pub fn new(max: usize) -> Self {
        LabelBudget {
            max,
            admitted: Mutex::new(HashSet::new()),
        }
    }

    /// The labels to record this pair under, and whether it was folded into `_other`.
    pub fn labels(&self, tenant: &str, job_type: &str) -> (JobLabels, bool) {
        let wanted = JobLabels {
            tenant: tenant.to_owned(),
            job_type: job_type.to_owned(),
        };
        let mut admitted = self.admitted.lock().expect("label budget lock");
        if admitted.contains(&wanted) {
            return (wanted, false);
        }
        if admitted.len() < self.max {
            admitted.insert(wanted.clone());
            return (wanted, false);
        }
        (JobLabels::other(), true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_past_the_budget_fold_into_other_and_admitted_ones_stay() {
        let budget = LabelBudget::new(2);
        assert_eq!(budget.labels("a", "x"), (labels("a", "x"), false));
        assert_eq!(budget.labels("b", "x"), (labels("b", "x"), false));
        assert_eq!(budget.labels("c", "x"), (labels(OTHER, OTHER), true));
        assert_eq!(
            budget.labels("a", "x"),
            (labels("a", "x"), false),
            "admitted pairs keep their labels"
        );
        assert_eq!(budget.labels("a", "y"), (labels(OTHER, OTHER), true));
    }

    fn labels(tenant: &str, job_type: &str) -> JobLabels {
        JobLabels {
            tenant: tenant.into(),
            job_type: job_type.into(),
        }
    }
}
