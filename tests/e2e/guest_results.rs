//! End to end through the real binary: what a guest hands back from `run` is recorded as
//! what it is. A 10 MB `fatal` ends the job `dead` after one attempt with its message
//! truncated in `last_error` (never replayed as "output too large"), and a malformed result
//! is retried like any trap with `last_error` naming what is wrong with it. The guest is
//! the `bad-result` sample (built from source by `scripts/build-samples`).

use crate::support::Sluice;
use sqlx::PgPool;

/// Migrate, push `bad-result`, and define it as a job type with `max_attempts` attempts
/// and retries due at once.
fn setup(pool: &PgPool, max_attempts: &str) -> Sluice {
    let limits = [
        "--max-attempts",
        max_attempts,
        "--backoff-base",
        "10ms",
        "--backoff-cap",
        "10ms",
    ];
    Sluice::with_type(pool, "bad-result", "bad-result", &limits)
}

fn enqueue(sluice: &Sluice, payload: &str) -> String {
    let job = sluice.json(&["enqueue", "bad-result", "--payload", payload]);
    job["id"]
        .as_i64()
        .expect("enqueue prints the id")
        .to_string()
}

#[sqlx::test(migrations = false)]
async fn a_ten_megabyte_fatal_ends_dead_after_one_attempt_with_its_message_truncated(pool: PgPool) {
    let sluice = setup(&pool, "5");
    let id = enqueue(&sluice, r#"{"mode":"huge-fatal"}"#);

    let summary = sluice.json(&["worker", "--drain", "--drain-horizon", "2s"]);
    assert_eq!(summary["dead"], 1, "{summary}");

    let shown = sluice.json(&["jobs", "show", &id]);
    assert_eq!(shown["state"], "dead", "{shown}");
    assert_eq!(shown["attempt"], 1, "fatal is never replayed");
    let attempts = sluice.json(&["jobs", "attempts", &id]);
    assert_eq!(attempts.as_array().unwrap().len(), 1, "{attempts}");
    let error = shown["last_error"].as_str().unwrap();
    assert!(
        error.starts_with("guest fatal: payment declined: xxx"),
        "{error:.100}"
    );
    // 4096 bytes of the 10 000 000 are kept.
    assert!(
        error.ends_with("x… (9,995,904 bytes dropped)"),
        "…{}",
        &error[error.len().saturating_sub(60)..]
    );
}

#[sqlx::test(migrations = false)]
async fn a_fatal_with_a_message_that_is_not_utf8_still_ends_dead_at_once(pool: PgPool) {
    let sluice = setup(&pool, "5");
    let id = enqueue(&sluice, r#"{"mode":"bad-utf8-fatal"}"#);

    let summary = sluice.json(&["worker", "--drain", "--drain-horizon", "2s"]);
    assert_eq!(summary["dead"], 1, "{summary}");
    let shown = sluice.json(&["jobs", "show", &id]);
    assert_eq!(shown["attempt"], 1);
    assert_eq!(
        shown["last_error"],
        "guest fatal: card \u{FFFD}\u{FFFD} declined \
         [not valid UTF-8: invalid bytes shown as U+FFFD]"
    );
}

#[sqlx::test(migrations = false)]
async fn a_malformed_result_is_retried_and_names_itself(pool: PgPool) {
    let sluice = setup(&pool, "2");
    let bad_tag = enqueue(&sluice, r#"{"mode":"bad-result-tag"}"#);
    let bad_list = enqueue(&sluice, r#"{"mode":"oob-output"}"#);

    let summary = sluice.json(&["worker", "--drain", "--drain-horizon", "5s"]);
    assert_eq!(summary["dead"], 2, "{summary}");

    for (id, want) in [
        (
            &bad_tag,
            "trap: invalid result from guest: result tag 7 (expected 0 = ok or 1 = err)",
        ),
        (
            &bad_list,
            "trap: invalid result from guest: output list at 0xfffffff0 of 64 bytes \
             is outside linear memory (",
        ),
    ] {
        let shown = sluice.json(&["jobs", "show", id]);
        assert_eq!(shown["state"], "dead", "{shown}");
        let attempts = sluice.json(&["jobs", "attempts", id]);
        assert_eq!(
            attempts.as_array().unwrap().len(),
            2,
            "a trap is retried until attempts run out: {attempts}"
        );
        let error = shown["last_error"].as_str().unwrap();
        assert!(error.starts_with(want), "{error}");
        assert!(!error.contains("output too large"), "{error}");
    }
}
