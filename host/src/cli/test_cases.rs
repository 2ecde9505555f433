//! `sluice test CASES.json --component C.wasm`: a task's unit tests, with no database and
//! no network. Each case is one attempt (as `sluice run` makes it) on its payload, with
//! its secrets and its recorded HTTP responses, checked against its expected outcome,
//! output (exact, or a JSON subset) and follow-up jobs; one line per case, then
//! `N passed, M failed`, exit 1 on a failure.
//!
//! Outbound HTTP is answered from the case's `http` list by the sandbox
//! (`HttpGrant::recorded`: matched by method and URL, each response used once, in order)
//! and never reaches the network, so no allow list applies; a request nothing recorded
//! answers fails for the guest and fails the case, naming its method and URL.
//!
//! Owns: the cases file's format and the comparison. Must not: open the database or the
//! network, or run a component another way than `run.rs` does.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;

use sluice_egress::{Grant, NetworkPolicy};
use sluice_sandbox::{
    CancellationToken, Grants, HttpGrant, JobInput, Limits, Outcome, RecordedHttp,
    RecordedResponse, RunReport,
};
use sluice_wire::jobs::bytes_as_json;

use super::attempt_flags::LimitFlags;
use super::read_file;
use super::run::{bad, follow_ups, local_sandbox, secret_grant};
use super::run_report::Exit;

#[derive(Debug, clap::Args)]
pub struct TestArgs {
    /// The cases: a JSON array of `{"name", "payload", "secrets", "attempt", "http",
    /// "expect": {"outcome", "output", "output_subset", "follow_ups"}}`
    /// (docs/task-authors.md).
    pub cases: PathBuf,
    /// The `.wasm` component under test.
    #[arg(long)]
    pub component: PathBuf,
    #[command(flatten)]
    pub limits: LimitFlags,
    /// This host's cache of precompiled components (as for `sluice run`).
    #[arg(long, env = "SLUICE_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
}

/// One case of the file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    /// Sent as its JSON text (default `{}`).
    #[serde(default)]
    payload: Option<Value>,
    #[serde(default)]
    secrets: BTreeMap<String, String>,
    #[serde(default = "first")]
    attempt: u32,
    expect: Expect,
    /// The responses the task's outbound requests get, matched by method and URL.
    #[serde(default)]
    http: Vec<Recorded>,
}

fn first() -> u32 {
    1
}

/// One recorded response of a case, and the request it answers.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Recorded {
    method: String,
    url: String,
    #[serde(default = "ok_status")]
    status: u16,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// The body as text.
    #[serde(default)]
    body: Option<String>,
    /// The body as JSON (with `content-type: application/json` unless `headers` set one).
    #[serde(default)]
    body_json: Option<Value>,
}

fn ok_status() -> u16 {
    200
}

impl Recorded {
    /// The sandbox's recorded response, or why this one cannot be used.
    fn response(&self) -> Result<RecordedResponse, String> {
        let mut headers: Vec<(String, String)> = self
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        let body = match (&self.body, &self.body_json) {
            (Some(_), Some(_)) => return Err("give `body` or `body_json`, not both".into()),
            (Some(text), None) => text.clone().into_bytes(),
            (None, Some(json)) => {
                if !headers
                    .iter()
                    .any(|(name, _)| name.eq_ignore_ascii_case("content-type"))
                {
                    headers.push(("content-type".into(), "application/json".into()));
                }
                json.to_string().into_bytes()
            }
            (None, None) => Vec::new(),
        };
        let response = RecordedResponse {
            method: self.method.to_ascii_uppercase(),
            url: self.url.clone(),
            status: self.status,
            headers,
            body,
        };
        response.check()?;
        Ok(response)
    }
}

/// What a case's task may send: nothing leaves, every request is answered from `http`.
fn recorded_grant(http: Vec<RecordedResponse>) -> Arc<HttpGrant> {
    Arc::new(HttpGrant {
        grant: Grant::default(),
        max_requests: sluice_shared::grants::DEFAULT_MAX_REQUESTS,
        recorded: Some(Arc::new(RecordedHttp { responses: http })),
    })
}

/// What a case expects; what it leaves out is not checked.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    /// `completed`, `retry`, `fatal`, `limit_exceeded`, `internal` or `cancelled`.
    outcome: Option<String>,
    /// The whole output (JSON when it is JSON, else a string).
    output: Option<Value>,
    /// Keys the output must have, with these values (nested objects likewise).
    output_subset: Option<Value>,
    /// The follow-up jobs, in order: each a subset of `{"job_type", "payload", …}`.
    follow_ups: Option<Vec<Value>>,
}

const OUTCOMES: [&str; 6] = [
    "completed",
    "retry",
    "fatal",
    "limit_exceeded",
    "internal",
    "cancelled",
];

pub async fn run(args: TestArgs) -> anyhow::Result<ExitCode> {
    let text = bad(read_file(&args.cases))?;
    let cases: Vec<Case> = bad(serde_json::from_slice(&text).map_err(|e| {
        anyhow::anyhow!(
            "{}: not a JSON array of test cases: {e}",
            args.cases.display()
        )
    }))?;
    let mut recorded = Vec::with_capacity(cases.len());
    for case in &cases {
        let responses: Result<Vec<_>, _> = case
            .http
            .iter()
            .enumerate()
            .map(|(i, r)| {
                r.response()
                    .map_err(|e| anyhow::anyhow!("case `{}`: http[{i}]: {e}", case.name))
            })
            .collect();
        recorded.push(bad(responses)?);
        if let Some(outcome) = &case.expect.outcome
            && !OUTCOMES.contains(&outcome.as_str())
        {
            return bad(Err(anyhow::anyhow!(
                "case `{}`: outcome `{outcome}` is not one of {}",
                case.name,
                OUTCOMES.join(", ")
            )));
        }
    }
    let bytes = bad(read_file(&args.component))?;
    let (sandbox, component) = local_sandbox(
        &args.component,
        bytes,
        args.cache_dir,
        NetworkPolicy::default(),
    )
    .await?;
    let limits = args.limits.over(Limits::default());
    let (mut passed, mut failed) = (0, 0);
    for (n, (case, http)) in cases.iter().zip(recorded).enumerate() {
        let flags: Vec<String> = case
            .secrets
            .iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect();
        let secrets = bad(secret_grant(&flags, None))?;
        let payload = case
            .payload
            .as_ref()
            .map_or_else(|| b"{}".to_vec(), |p| p.to_string().into_bytes());
        let job = JobInput {
            id: n as u64 + 1,
            job_type: "test".to_owned(),
            tenant: "default".to_owned(),
            attempt: case.attempt.max(1),
            max_attempts: case.attempt.max(3),
            payload,
            trace: None,
        };
        let grants = Grants {
            http: Some(recorded_grant(http)),
            follow_ups: follow_ups(&component),
            secrets,
            durable: None,
        };
        let report = sandbox
            .run_with(&component, job, &limits, grants, CancellationToken::new())
            .await;
        let problems = check(case, &report);
        if problems.is_empty() {
            passed += 1;
            println!("ok    {}", case.name);
        } else {
            failed += 1;
            println!("FAIL  {}", case.name);
            for problem in problems {
                println!("      {}", problem.replace('\n', "\n      "));
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// What differs between `case`'s expectations and `report`, one entry per difference.
fn check(case: &Case, report: &RunReport) -> Vec<String> {
    let mut problems: Vec<String> = report
        .http
        .unmatched
        .iter()
        .map(|request| format!("no recorded response for {request}"))
        .collect();
    let got = Exit::of(&report.outcome).label();
    let reason = report
        .outcome
        .failure()
        .map(|f| format!(" ({})", f.reason()))
        .unwrap_or_default();
    if let Some(want) = &case.expect.outcome
        && want != got
    {
        problems.push(format!("outcome: expected {want}, got {got}{reason}"));
    }
    let output = match &report.outcome {
        Outcome::Completed { output } => Some(bytes_as_json(output)),
        Outcome::Failed(_) | Outcome::Suspended(_) => None,
    };
    let shown = |v: Option<&Value>| {
        v.map_or_else(
            || format!("no output: the attempt ended {got}{reason}"),
            |v| serde_json::to_string_pretty(v).unwrap_or_default(),
        )
    };
    if let Some(want) = &case.expect.output
        && Some(want) != output.as_ref()
    {
        problems.push(format!(
            "output: expected\n  {}\ngot\n  {}",
            shown(Some(want)).replace('\n', "\n  "),
            shown(output.as_ref()).replace('\n', "\n  ")
        ));
    }
    if let Some(want) = &case.expect.output_subset {
        match &output {
            None => problems.push(format!("output_subset: {}", shown(None))),
            Some(output) => {
                if let Some(diff) = subset(want, output, "output") {
                    problems.push(format!("output_subset: {diff}"));
                }
            }
        }
    }
    if let Some(want) = &case.expect.follow_ups {
        let got: Vec<Value> = report
            .follow_ups
            .iter()
            .map(|f| {
                serde_json::json!({
                    "job_type": f.job_type,
                    "payload": bytes_as_json(&f.payload),
                    "priority": f.priority,
                    "delay_ms": f.delay.map(|d| d.as_millis() as u64),
                    "run_at_ms": f.run_at_ms,
                    "max_attempts": f.max_attempts,
                    "idempotency_key": f.idempotency_key,
                })
            })
            .collect();
        if let Some(diff) = subset(&Value::from(want.clone()), &Value::from(got), "follow_ups") {
            problems.push(format!("follow_ups: {diff}"));
        }
    }
    problems
}

/// `None` when `actual` has everything `expected` has (objects: these keys, recursively;
/// arrays: as many elements, each a subset; anything else: equal); else where and how
/// they first differ.
fn subset(expected: &Value, actual: &Value, path: &str) -> Option<String> {
    match (expected, actual) {
        (Value::Object(want), Value::Object(got)) => want.iter().find_map(|(key, value)| {
            let here = format!("{path}.{key}");
            match got.get(key) {
                None => Some(format!("`{here}` is missing (expected {value})")),
                Some(actual) => subset(value, actual, &here),
            }
        }),
        (Value::Array(want), Value::Array(got)) if want.len() != got.len() => Some(format!(
            "`{path}` has {} elements, expected {}: {actual}",
            got.len(),
            want.len()
        )),
        (Value::Array(want), Value::Array(got)) => want
            .iter()
            .zip(got)
            .enumerate()
            .find_map(|(i, (w, g))| subset(w, g, &format!("{path}[{i}]"))),
        _ if expected == actual => None,
        _ => Some(format!("`{path}`: expected {expected}, got {actual}")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Recorded, subset};

    #[test]
    fn a_recording_becomes_the_sandbox_response_or_says_why_not() {
        let recorded = |v: serde_json::Value| serde_json::from_value::<Recorded>(v).unwrap();
        let json_body = recorded(json!({
            "method": "post", "url": "https://a.example/x", "body_json": { "id": 1 }
        }))
        .response()
        .unwrap();
        assert_eq!(json_body.method, "POST");
        assert_eq!(json_body.status, 200);
        assert_eq!(json_body.body, br#"{"id":1}"#);
        assert_eq!(
            json_body.headers,
            vec![("content-type".to_owned(), "application/json".to_owned())]
        );
        let typed = recorded(json!({
            "method": "GET", "url": "https://a.example/x", "status": 404,
            "headers": { "Content-Type": "text/plain" }, "body_json": "x"
        }))
        .response()
        .unwrap();
        assert_eq!(typed.headers.len(), 1, "{:?}", typed.headers);
        let both = recorded(json!({
            "method": "GET", "url": "https://a.example/x", "body": "a", "body_json": 1
        }));
        assert!(both.response().unwrap_err().contains("not both"));
        let relative = recorded(json!({ "method": "GET", "url": "/x" }));
        assert!(relative.response().is_err());
    }

    #[test]
    fn a_subset_names_the_first_difference() {
        let got = json!({ "a": 1, "b": { "c": [1, 2], "d": "x" } });
        assert_eq!(subset(&json!({ "b": { "d": "x" } }), &got, "output"), None);
        assert_eq!(
            subset(&json!({ "b": { "c": [1, 3] } }), &got, "output").unwrap(),
            "`output.b.c[1]`: expected 3, got 2"
        );
        assert!(
            subset(&json!({ "z": 1 }), &got, "output")
                .unwrap()
                .contains("`output.z` is missing")
        );
        assert!(subset(&json!([1]), &json!([1, 2]), "f").is_some());
    }
}
