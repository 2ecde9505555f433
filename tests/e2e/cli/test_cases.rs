//! `sluice test CASES.json --component C.wasm` (issue #41), with `DATABASE_URL` removed
//! from the child's environment: cases for `echo` and `flaky` pass (exit 0, `N passed, 0
//! failed`); cases for `http-get` and `post-json` with recorded HTTP responses (201 →
//! completed, 503 → retry, 422 → fatal) pass with nothing sent (their URLs do not
//! resolve); a wrong expectation fails its case with a readable difference (exit 1), and
//! so does a request with no recorded response, naming its method and URL; a cases file
//! that cannot be used is bad input (exit 2).

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
    assert!(stdout.ends_with("1 passed, 2 failed\n"), "{stdout}");

    let (out, _) = test("echo", "bad", json!({ "not": "an array" }));
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

const INVOICES: &str = "https://billing.example.invalid/v1/invoices";

#[test]
fn recorded_responses_answer_the_requests_and_nothing_is_sent() {
    let post = |status: u16, body: Value| json!([{ "method": "POST", "url": INVOICES, "status": status, "body_json": body }]);
    let document = json!({ "url": INVOICES, "document": { "total": 10 } });
    let (out, stdout) = test(
        "post-json",
        "post-json",
        json!([
            { "name": "created", "payload": document, "http": post(201, json!({ "id": "inv_1" })),
              "expect": { "outcome": "completed",
                          "output": { "status": 201, "response": { "id": "inv_1" } } } },
            { "name": "unavailable", "payload": document,
              "http": post(503, json!({ "error": "busy" })),
              "expect": { "outcome": "retry" } },
            { "name": "rejected", "payload": document,
              "http": post(422, json!({ "error": "bad total" })),
              "expect": { "outcome": "fatal" } },
        ]),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("ok    created"), "{stdout}");
    assert!(stdout.ends_with("3 passed, 0 failed\n"), "{stdout}");

    let url = "http://api.example.invalid/status?verbose=1";
    let (out, stdout) = test(
        "http-get",
        "http-get",
        json!([
            { "name": "twice", "payload": { "url": url, "times": 2 },
              "http": [
                  { "method": "GET", "url": url, "status": 503, "body": "busy" },
                  { "method": "GET", "url": url, "status": 200, "body": "all good",
                    "headers": { "content-type": "text/plain" } },
              ],
              "expect": { "outcome": "completed",
                          "output_subset": { "status": 200, "body_head": "all good" } } },
        ]),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.ends_with("1 passed, 0 failed\n"), "{stdout}");
}

#[test]
fn a_wrong_expectation_or_an_unrecorded_request_fails_the_case() {
    let document = json!({ "url": INVOICES, "document": { "total": 10 } });
    let (out, stdout) = test(
        "post-json",
        "post-json-wrong",
        json!([
            { "name": "wrong output", "payload": document,
              "http": [{ "method": "POST", "url": INVOICES, "status": 201,
                         "body_json": { "id": "inv_2" } }],
              "expect": { "output": { "status": 201, "response": { "id": "inv_1" } } } },
            { "name": "not recorded", "payload": document,
              "http": [{ "method": "GET", "url": INVOICES, "status": 200 }],
              "expect": { "outcome": "completed" } },
        ]),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("FAIL  wrong output"), "{stdout}");
    assert!(stdout.contains("\"id\": \"inv_1\""), "{stdout}");
    assert!(stdout.contains("\"id\": \"inv_2\""), "{stdout}");
    assert!(stdout.contains("FAIL  not recorded"), "{stdout}");
    assert!(
        stdout.contains(&format!("no recorded response for POST {INVOICES}")),
        "{stdout}"
    );
    assert!(stdout.ends_with("0 passed, 2 failed\n"), "{stdout}");

    // A recording that cannot be used is bad input.
    let (out, _) = test(
        "post-json",
        "post-json-bad",
        json!([{ "name": "x", "payload": document,
                 "http": [{ "method": "POST", "url": "/relative", "status": 200 }],
                 "expect": {} }]),
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}
