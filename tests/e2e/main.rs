//! The end-to-end tests: one test binary (so one wasmtime link, not one per file) of one
//! module per area, each against real Postgres, the real `sluice` binary or its library
//! in-process, and real components. Shared helpers are in `support` (the binary, the
//! fixture, the job factory, the in-process API); the egress crate's test servers and CA
//! are `egress_support`. Run one area with `cargo test --test e2e AREA::` (e.g.
//! `cargo test --test e2e cli::`); the filter is a substring, so `http::` also runs
//! `dashboard_http::`, `secrets::` also `guest_secrets::` and `fairness::` also
//! `prefetch_fairness::` (add `--skip` or part of a test name to narrow it).
//!
//! Tests run in parallel in this one process: a test must not set environment variables,
//! bind fixed ports or rely on being alone. Each makes its own database
//! (`#[sqlx::test]`); what they share on purpose is the guest components' disk cache
//! (`languages`, `guest_secrets`) and the first fixture's log filter.
//!
//! Must not: hold tests (only `mod` lines), or be split back into binaries without a
//! gating reason (what filled a CI disk once was ~25 binaries each linking wasmtime).

mod support;

#[path = "../../host/egress/tests/support/mod.rs"]
#[allow(dead_code)]
mod egress_support;

mod attempt_logs;
mod bench;
mod chaos;
mod cli;
mod clients;
mod dashboard;
mod dashboard_http;
mod durable;
mod egress;
mod fairness;
mod fleet;
mod flow_control;
mod follow_ups;
mod guest_results;
mod guest_secrets;
mod http;
mod languages;
mod metrics;
mod openapi;
mod postgres;
mod prefetch_auto;
mod prefetch_fairness;
mod schedules;
mod secrets;
mod sql_enqueue;
mod traces;
mod usage;
mod webhooks;
mod webhooks_api;
mod worker;
mod workers;
