//! Integration tests of `sluice-sandbox`, one binary (each linked test binary carries
//! wasmtime: eleven of them were 661 MB): real wasmtime and real sample components, built
//! from `sample-tasks/` by `scripts/build-samples` (and `scripts/build-guests LANG` for
//! `egress_languages`, `durable_languages` and `retry_after`). `common` holds the shared helpers,
//! `common::fixtures` the hand-made components, `common::http_server` the server egress
//! tests send to.

mod common;
mod concurrency;
mod disk_cache;
mod durable;
mod durable_languages;
mod durable_waits;
mod egress;
mod egress_caps;
mod egress_languages;
mod guest_errors;
mod guest_results;
mod hostile;
mod limits;
mod recorded_http;
mod retry_after;
mod secrets;
mod validation;
