//! `/metrics` end to end: the real `sluice worker --metrics-listen` against a test
//! database runs sample components while the test scrapes it. The text must parse as
//! Prometheus text, and the counters, histograms and queue gauges must move with the jobs.

use std::collections::HashMap;
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::support::{Sluice, hello_server, wait_for};
use sqlx::PgPool;

/// One scrape: every sample by its series (`name{label="value",...}` as printed).
struct Scrape {
    samples: HashMap<String, f64>,
}

impl Scrape {
    fn get(&self, series: &str) -> Option<f64> {
        self.samples.get(series).copied()
    }

    fn value(&self, series: &str) -> f64 {
        self.get(series).unwrap_or(0.0)
    }
}

/// Checks every line of a Prometheus text exposition (format 0.0.4): `# HELP name text`,
/// `# TYPE name type`, or `name{labels} value` belonging to a declared family. Panics
/// naming the first bad line.
fn parse_prometheus_text(text: &str) -> Scrape {
    let mut families: HashMap<String, String> = HashMap::new();
    let mut samples = HashMap::new();
    for (number, line) in text.lines().enumerate() {
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap_or_default();
            if !is_metric_name(name) {
                refuse(number, line, "HELP without a valid metric name");
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split(' ');
            let (Some(name), Some(kind), None) = (parts.next(), parts.next(), parts.next()) else {
                refuse(number, line, "TYPE is not `# TYPE name type`")
            };
            if !is_metric_name(name)
                || !["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind)
            {
                refuse(number, line, "TYPE with a bad name or type");
            }
            if families.insert(name.to_owned(), kind.to_owned()).is_some() {
                refuse(number, line, "family declared twice");
            }
            continue;
        }
        if line.starts_with('#') {
            refuse(number, line, "a comment that is neither HELP nor TYPE");
        }
        let name_end = line
            .find(['{', ' '])
            .unwrap_or_else(|| refuse(number, line, "no value"));
        let name = &line[..name_end];
        if !is_metric_name(name) {
            refuse(number, line, "bad metric name");
        }
        let mut rest = &line[name_end..];
        let mut series = name.to_owned();
        if rest.starts_with('{') {
            let close = label_block_end(rest)
                .unwrap_or_else(|| refuse(number, line, "unterminated labels"));
            series.push_str(&rest[..=close]);
            rest = &rest[close + 1..];
        }
        let value = rest
            .strip_prefix(' ')
            .unwrap_or_else(|| refuse(number, line, "no space before the value"));
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            "NaN" => f64::NAN,
            v => v
                .parse()
                .unwrap_or_else(|_| refuse(number, line, "the value is not a number")),
        };
        let family = families
            .iter()
            .find(|(family, kind)| {
                name == family.as_str()
                    || (kind.as_str() == "histogram"
                        && ["_bucket", "_sum", "_count"]
                            .iter()
                            .any(|suffix| name == format!("{family}{suffix}")))
            })
            .map(|(family, _)| family.clone());
        if family.is_none() {
            refuse(number, line, "a sample of no declared family");
        }
        samples.insert(series, value);
    }
    Scrape { samples }
}

fn refuse(number: usize, line: &str, why: &str) -> ! {
    panic!("line {}: {why}: {line:?}", number + 1)
}

fn is_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// Index of the `}` closing a `{name="value",...}` block, checking each pair.
fn label_block_end(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 1;
    loop {
        if bytes.get(i) == Some(&b'}') {
            return Some(i);
        }
        let name_start = i;
        while bytes
            .get(i)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
        {
            i += 1;
        }
        if i == name_start || bytes.get(i) != Some(&b'=') || bytes.get(i + 1) != Some(&b'"') {
            return None;
        }
        i += 2;
        loop {
            match bytes.get(i)? {
                b'\\' => {
                    if !matches!(bytes.get(i + 1)?, b'\\' | b'"' | b'n') {
                        return None;
                    }
                    i += 2;
                }
                b'"' => break,
                b'\n' => return None,
                _ => i += 1,
            }
        }
        i += 1;
        match bytes.get(i)? {
            b',' => i += 1,
            b'}' => return Some(i),
            _ => return None,
        }
    }
}

async fn scrape(url: &str) -> Option<Scrape> {
    let response = crate::support::http_get(url).await.ok()?;
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    Some(parse_prometheus_text(&response.text().await.ok()?))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Worker(Child);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn job(name: &str, ty: &str) -> String {
    format!("{name}{{tenant=\"default\",job_type=\"{ty}\"}}")
}

#[sqlx::test(migrations = false)]
async fn metrics_parse_and_move_when_a_real_worker_runs_jobs(pool: PgPool) {
    let sluice = Sluice::migrated(&pool);
    sluice.define("echo", "echo", &[]);
    sluice.define("fatal", "fatal", &[]);
    sluice.define(
        "spin",
        "spin-forever",
        &[
            "--timeout",
            "300ms",
            // The clock, not fuel, must stop it (a fast CPU burns the default 5·10⁹
            // units in under a second).
            "--fuel",
            "1000000000000",
            "--max-attempts",
            "1",
        ],
    );

    sluice.define("fan", "fan-out", &[]);

    let origin = hello_server();
    sluice.define(
        "fetch",
        "http-get",
        &[
            "--allow-http",
            &origin,
            "--egress-allow-network",
            "127.0.0.1/32",
        ],
    );

    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let url = format!("http://{addr}/metrics");
    let log_path = std::env::temp_dir().join(format!("sluice-metrics-worker-{port}.log"));
    let log = std::fs::File::create(&log_path).unwrap();
    let mut worker = Worker(
        sluice
            .command(&[
                "worker",
                "--metrics-listen",
                &addr,
                "--poll-interval",
                "100ms",
                "--log-format",
                "json",
                "--egress-allow-network",
                "127.0.0.1/32",
            ])
            .env("SLUICE_LOG", "warn,sluice=info")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start the worker"),
    );
    let before = wait_for("the metrics endpoint", Duration::from_secs(60), || {
        scrape(&url)
    })
    .await;
    assert_eq!(
        before.value(&job("sluice_jobs_completed_total", "echo")),
        0.0
    );
    assert_eq!(before.get("sluice_queue_stats_up"), Some(1.0));
    assert_eq!(
        before.get("sluice_queue_depth{tenant=\"default\",job_type=\"echo\",state=\"pending\"}"),
        Some(0.0),
        "registered types show up with zeros"
    );

    for n in 0..3 {
        sluice.ok(&["enqueue", "echo", "--payload", &format!("{{\"n\":{n}}}")]);
    }
    sluice.ok(&["enqueue", "fatal", "--payload", "{}"]);
    sluice.ok(&["enqueue", "spin", "--payload", "{}"]);
    // Two follow-up echo jobs, written with the parent's completion.
    let fan = r#"{"type": "echo", "count": 2}"#;
    sluice.ok(&["enqueue", "fan", "--payload", fan]);
    // One request answered, one refused (not on the type's list; nothing is sent).
    let fetch = |url: &str| format!("{{\"url\":\"{url}\"}}");
    sluice.ok(&[
        "enqueue",
        "fetch",
        "--payload",
        &fetch(&format!("{origin}/ok")),
    ]);
    sluice.ok(&["enqueue", "fetch", "--payload", &fetch("http://10.0.0.1/")]);

    // Counters move as the worker records outcomes; the queue gauges follow within their
    // cache lifetime (5 s).
    let after = wait_for(
        "the jobs to be counted",
        Duration::from_secs(120),
        || async {
            let s = scrape(&url).await?;
            let depth =
                "sluice_queue_depth{tenant=\"default\",job_type=\"echo\",state=\"completed\"}";
            (s.value(&job("sluice_jobs_completed_total", "echo")) == 5.0
                && s.value(&job("sluice_jobs_completed_total", "fan")) == 1.0
                && s.value(&job("sluice_jobs_dead_total", "fatal")) == 1.0
                && s.value(&job("sluice_jobs_dead_total", "spin")) == 1.0
                && s.value(&job("sluice_jobs_completed_total", "fetch")) == 1.0
                && s.value(&job("sluice_jobs_dead_total", "fetch")) == 1.0
                && s.value(depth) == 5.0)
                .then_some(s)
        },
    )
    .await;
    assert_eq!(
        after.value(&job("sluice_job_duration_seconds_count", "echo")),
        5.0
    );
    assert_eq!(after.value(&job("sluice_job_attempts_count", "echo")), 5.0);
    assert_eq!(
        after.value(&job("sluice_job_attempts_sum", "echo")),
        5.0,
        "one attempt each"
    );
    assert_eq!(
        after.value(&job("sluice_sandbox_instantiate_seconds_count", "echo")),
        5.0
    );
    assert_eq!(after.value(&job("sluice_follow_up_jobs_total", "fan")), 2.0);
    assert_eq!(
        after.value(&job("sluice_follow_up_jobs_total", "echo")),
        0.0
    );
    assert!(after.value(&job("sluice_job_fuel_used_sum", "echo")) > 0.0);
    assert_eq!(
        after.value(
            "sluice_limit_violations_total{tenant=\"default\",job_type=\"spin\",reason=\"timeout\"}"
        ),
        1.0
    );
    assert_eq!(
        after.value("sluice_queue_depth{tenant=\"default\",job_type=\"fatal\",state=\"dead\"}"),
        1.0
    );
    let http = |outcome: &str| {
        format!(
            "sluice_http_requests_total{{tenant=\"default\",job_type=\"fetch\",outcome=\"{outcome}\"}}"
        )
    };
    assert_eq!(
        (after.value(&http("ok")), after.value(&http("denied"))),
        (1.0, 1.0)
    );
    assert_eq!(
        after.value(&job("sluice_http_request_duration_seconds_count", "fetch")),
        2.0
    );
    assert_eq!(
        after.value(
            "sluice_http_body_bytes_total{tenant=\"default\",job_type=\"fetch\",direction=\"in\"}"
        ),
        5.0
    );
    assert_eq!(after.value("sluice_worker_attempts_in_progress"), 0.0);
    assert_eq!(after.value("sluice_worker_outcomes_dropped_total"), 0.0);

    // JSON logs carry the job's id, tenant, type and attempt as span fields.
    let _ = worker.0.kill();
    let _ = worker.0.wait();
    let logs = std::fs::read_to_string(&log_path).unwrap();
    let failed: serde_json::Value = logs
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|v| v["fields"]["message"] == "attempt failed" && v["span"]["type"] == "fatal")
        .unwrap_or_else(|| panic!("no JSON log of the fatal attempt:\n{logs}"));
    let span = &failed["span"];
    assert_eq!(span["name"], "job", "{failed}");
    assert_eq!(span["tenant"], "default", "{failed}");
    assert_eq!(span["attempt"], 1, "{failed}");
    assert!(span["id"].as_i64().is_some_and(|id| id > 0), "{failed}");
}

#[test]
fn the_checker_refuses_what_is_not_prometheus_text() {
    let good = "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\\\"\"} 2\n";
    assert_eq!(
        parse_prometheus_text(good).value("a_total{x=\"1\\\"\"}"),
        2.0
    );
    for bad in [
        "a_total 1\n",                    // no family
        "# TYPE a counter\na{x=\"1} 2\n", // unterminated label
        "# TYPE a counter\na two\n",      // not a number
        "# TYPE a gauge\n# EOF\n",        // an OpenMetrics-only line
    ] {
        let result = std::panic::catch_unwind(|| parse_prometheus_text(bad));
        assert!(result.is_err(), "accepted {bad:?}");
    }
}
