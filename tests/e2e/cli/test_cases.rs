//! `sluice test CASES.json --component C.wasm` (issue #41, first part: no recorded HTTP
//! yet), with `DATABASE_URL` removed from the child's environment: cases for `echo` and
//! `flaky` pass (exit 0, `N passed, 0 failed`); a wrong expectation fails its case with a
//! readable difference (exit 1); a case with recorded HTTP responses fails saying they
//! are not supported yet; a cases file that cannot be used is bad input (exit 2).

use std::process::Output;

use serde_json::{Value, json};

use crate::support::sample;

/// `sluice test FILE --component SAMPLE` with `cases` written to FILE.
fn test(component: &str, name: &str, cases: Value) -> (Output, String) {
    let dir = std::env::temp_dir().join(format!("sluice-test-cases-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{name}.json"));
    std::fs::write(&file, cases.to_string()).unwrap();
    let cache = std::env::temp_dir().join(format!("sluice-run-cache-{}", std::process::id()));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("test")
        .arg(&file)
        .arg("--component")
        .arg(sample(component))
        .env_remove("DATABASE_URL")
        .env("SLUICE_CACHE_DIR", cache)
        .env("SLUICE_LOG", "warn")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (out, stdout)
}

#[test]
fn passing_cases_pass_and_exit_0() {
    let (out, stdout) = test(
        "echo",
        "echo",
        json!([
            { "name": "echoes", "payload": { "a": 1 },
              "expect": { "outcome": "completed", "output": { "a": 1 } } },
            { "name": "subset", "payload": { "a": 1, "b": { "c": [1, 2] } },
              "expect": { "output_subset": { "b": { "c": [1, 2] } } } },
        ]),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("ok    echoes"), "{stdout}");
    assert!(stdout.ends_with("2 passed, 0 failed\n"), "{stdout}");

    let (out, stdout) = test(
        "flaky",
        "flaky",
        json!([
            { "name": "retries first", "payload": { "succeed_on": 2 },
              "expect": { "outcome": "retry" } },
            { "name": "then completes", "payload": { "succeed_on": 2 }, "attempt": 2,
              "expect": { "outcome": "completed", "output": "ok on attempt 2" } },
        ]),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.ends_with("2 passed, 0 failed\n"), "{stdout}");
}

#[test]
fn a_wrong_expectation_fails_with_a_readable_difference() {
    let (out, stdout) = test(
        "echo",
        "wrong",
        json!([
            { "name": "right", "payload": { "a": 1 }, "expect": { "output": { "a": 1 } } },
            { "name": "wrong subset", "payload": { "a": 1, "b": { "c": 2 } },
              "expect": { "output_subset": { "b": { "c": 3 } } } },
            { "name": "wrong outcome", "payload": { "a": 1 },
              "expect": { "outcome": "fatal" } },
            { "name": "recorded http", "payload": { "a": 1 },
              "http": [{ "method": "GET", "url": "https://api.example.com/", "status": 200 }],
              "expect": { "outcome": "completed" } },
        ]),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("ok    right"), "{stdout}");
    assert!(stdout.contains("FAIL  wrong subset"), "{stdout}");
    assert!(
        stdout.contains("`output.b.c`: expected 3, got 2"),
        "{stdout}"
    );
    assert!(
        stdout.contains("outcome: expected fatal, got completed"),
        "{stdout}"
    );
    assert!(
        stdout.contains("recorded HTTP responses (`http`) are not supported yet"),
        "{stdout}"
    );
    assert!(stdout.ends_with("1 passed, 3 failed\n"), "{stdout}");

    let (out, _) = test("echo", "bad", json!({ "not": "an array" }));
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}
