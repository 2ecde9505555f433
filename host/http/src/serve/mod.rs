//! What `sluice serve` serves, put together: the HTTP API (`crate::api`), the dashboard
//! under `/ui` (`crate::ui`) and `GET /metrics` (`crate::scrape`) in one axum app
//! ([`app`]), and the connection loop that serves it ([`serve_with`]).
//!
//! The layer above the API and the dashboard, which share their state through the leaf
//! `crate::app_state` and import neither each other nor this. Must not: hold handlers or
//! pages (those are the API's and the dashboard's).

mod app;
mod server;

pub use app::app;
pub use server::{DEFAULT_HEADER_TIMEOUT, serve, serve_with};
