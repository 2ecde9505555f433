//! Integration tests of `sluice-store` against a real Postgres. Every test gets its own
//! freshly migrated database (`#[sqlx::test]`); set `DATABASE_URL` to a server where the
//! user may create databases. No test sleeps: time is moved with SQL.

mod admin;
mod aliases;
mod attempt_logs;
mod batch;
mod bulk;
mod children;
mod claim;
mod common;
mod components;
mod connect;
mod edges;
mod enqueue;
mod fairness;
mod flow;
mod flow_fleet;
mod follow_ups;
mod idempotency;
mod job_search;
mod journal;
mod lease;
mod listen;
mod maintenance;
mod migrate;
mod module_graph;
mod module_order;
mod one_enqueue;
mod overview;
mod plans;
mod reap;
mod retention;
mod schedules;
mod schema_file;
mod sealed;
mod secrets;
mod signals;
mod sql_enqueue;
mod sql_files;
mod stats;
mod ui_sessions;
mod upgrade;
mod waits;
mod waits_flow;
mod workers;
