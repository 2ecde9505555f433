//! The live scenarios (`scenarios.rs`) against the server named by `SLUICE_URL` and
//! `SLUICE_TOKEN` (a token of tenant `default`; the server runs a worker with the job types
//! `echo`, `fatal` and `flaky`). Ignored by default:
//! `SLUICE_URL=... SLUICE_TOKEN=... cargo test -p sluice-client --test live -- --ignored`.

mod scenarios;

#[tokio::test]
#[ignore = "needs a live server: set SLUICE_URL and SLUICE_TOKEN (tests/e2e/clients.rs runs it)"]
async fn live_scenarios() {
    let url = std::env::var("SLUICE_URL").expect("SLUICE_URL (e.g. http://127.0.0.1:40123)");
    let token = std::env::var("SLUICE_TOKEN").expect("SLUICE_TOKEN (a token of tenant default)");
    scenarios::run_all(&url, &token).await;
}
