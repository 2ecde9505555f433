//! [`Enqueue`]: a builder of the generated `EnqueueRequest` (type and payload, then
//! priority, `run_at` or `delay`, max attempts, idempotency key and scope, concurrency
//! key), and [`Enqueued`], the answer of [`crate::Client::enqueue`].
//!
//! Owns: how a `Duration` delay is written (through [`crate::format_duration`]). Must not:
//! check what the server checks (it names the bad field in a 400).

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::generated::{EnqueueRequest, JobView, KeyScope, Priority, PriorityLabel};
use crate::wait::format_duration;

/// A job to enqueue: `Enqueue::new("echo", json!({...})).priority(PriorityLabel::High)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Enqueue {
    request: EnqueueRequest,
}

impl Enqueue {
    /// A job of `job_type` with `payload` (any JSON; the component receives its text).
    pub fn new(job_type: impl Into<String>, payload: Value) -> Self {
        Enqueue {
            request: EnqueueRequest {
                r#type: job_type.into(),
                payload: Some(payload),
                priority: None,
                run_at: None,
                delay: None,
                max_attempts: None,
                idempotency_key: None,
                key_scope: None,
                concurrency_key: None,
            },
        }
    }

    /// Claim order: a label (`PriorityLabel::High`) or an integer from -32768 to 32767
    /// (`Priority::Integer(25)`); higher runs first, default `medium` (10).
    pub fn priority(mut self, priority: impl Into<Priority>) -> Self {
        self.request.priority = Some(Some(priority.into()));
        self
    }

    /// Runs no earlier than `at` (not with [`Enqueue::delay`]).
    pub fn run_at(mut self, at: DateTime<Utc>) -> Self {
        self.request.run_at = Some(Some(at));
        self.request.delay = None;
        self
    }

    /// Runs no earlier than `delay` from now, to the millisecond (not with
    /// [`Enqueue::run_at`]).
    pub fn delay(mut self, delay: Duration) -> Self {
        self.request.delay = Some(Some(format_duration(delay)));
        self.request.run_at = None;
        self
    }

    /// Attempts before the job is dead (default: the job type's); 1: never retried.
    pub fn max_attempts(mut self, attempts: i32) -> Self {
        self.request.max_attempts = Some(Some(attempts));
        self
    }

    /// A key unique per tenant: enqueueing it again answers the job holding it and
    /// creates nothing ([`Enqueued::created`] is false).
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.request.idempotency_key = Some(Some(key.into()));
        self
    }

    /// How long the idempotency key stays taken: `Retained` (default: while the job
    /// exists) or `Unfinished` (freed once it finishes). Only with an idempotency key.
    pub fn key_scope(mut self, scope: KeyScope) -> Self {
        self.request.key_scope = Some(Some(scope));
        self
    }

    /// At most the type's `max_running_per_key` jobs with this key run at once.
    pub fn concurrency_key(mut self, key: impl Into<String>) -> Self {
        self.request.concurrency_key = Some(Some(key.into()));
        self
    }

    /// The request as it will be sent.
    pub fn request(&self) -> &EnqueueRequest {
        &self.request
    }
}

impl From<Enqueue> for EnqueueRequest {
    fn from(job: Enqueue) -> Self {
        job.request
    }
}

impl From<i32> for Priority {
    fn from(value: i32) -> Self {
        Priority::Integer(value.into())
    }
}

/// Sanity: a label is a priority.
const _: fn(PriorityLabel) -> Priority = Priority::Label;

/// The answer of [`crate::Client::enqueue`].
#[derive(Clone, Debug, PartialEq)]
pub struct Enqueued {
    /// The job: the new one, or the one holding the idempotency key.
    pub job: JobView,
    /// False when the idempotency key was taken and nothing was created (HTTP 200
    /// instead of 201).
    pub created: bool,
}
