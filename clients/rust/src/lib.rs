//! A typed async client of Sluice's HTTP API (`sluice serve`).
//!
//! Two layers:
//! - [`generated`] (re-exported at the crate root), written by `clients/rust/generate.py`
//!   from `clients/openapi.json`: a type for every schema of the API and one method of
//!   [`Api`] per operation (every route, one HTTP request each);
//! - [`Client`], written by hand over it: enqueue (one, or a batch), get, [`Client::wait`]
//!   for a job to finish, list (a page, or every page), cancel, retry and signal.
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use serde_json::json;
//! use sluice_client::{Client, Enqueue, JobState, PriorityLabel};
//!
//! # async fn example() -> Result<(), sluice_client::Error> {
//! let client = Client::new("http://127.0.0.1:8080", "sluice_3f9c...")?;
//! let enqueued = client
//!     .enqueue(
//!         Enqueue::new("echo", json!({"hello": "world"}))
//!             .priority(PriorityLabel::High)
//!             .idempotency_key("hello-1"),
//!     )
//!     .await?;
//! let job = client.wait(enqueued.job.id, Duration::from_secs(30)).await?;
//! assert_eq!(job.state, JobState::Completed);
//! println!("output: {}", job.output);
//! # Ok(())
//! # }
//! ```
//!
//! Errors are one type, [`Error`]: [`Error::Api`] carries the HTTP status, the API's
//! [`ErrorCode`] (an unknown code is kept in [`ErrorCode::Other`]), its message and
//! `Retry-After`; [`Error::Transport`] is a connection that failed; [`Error::Timeout`] a
//! [`Client::wait`] that ran out of time, with the job as last seen.

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;

#[macro_use]
mod string_enum;

mod client;
mod document;
mod enqueue;
mod error;
pub mod generated;
mod list;
mod transport;
mod wait;

#[cfg(test)]
mod tests;

pub use client::Client;
pub use document::{Operation, document_differences};
pub use enqueue::{Enqueue, Enqueued};
pub use error::Error;
pub use generated::*;
pub use list::{ListParams, Pages};
pub use transport::{
    Api, DEFAULT_REQUEST_TIMEOUT, QueryValue, Reply, TENANT_HEADER, default_http_client,
    double_option,
};
pub use wait::{MAX_WAIT_CHUNK, format_duration, is_finished};
