//! The `OTEL_*` variables: what turns tracing off, endpoints, protocols, headers,
//! timeouts, samplers, the batch processor and the resource; each error names its variable.

use std::time::Duration;

use super::collector::vars;
use crate::TraceConfigError;
use crate::config::{Config, Protocol};
use crate::parse::key_values;
use crate::sampler::{RootSampler, Sampler};

const ENDPOINT: (&str, &str) = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318");

fn config(pairs: &[(&str, &str)]) -> Result<Option<Config>, TraceConfigError> {
    Config::from_vars("sluice-test", vars(pairs))
}

fn enabled(pairs: &[(&str, &str)]) -> Config {
    let mut all = vec![ENDPOINT];
    all.extend_from_slice(pairs);
    config(&all).unwrap().expect("enabled")
}

fn error(pairs: &[(&str, &str)]) -> String {
    let mut all = vec![ENDPOINT];
    all.extend_from_slice(pairs);
    config(&all).unwrap_err().to_string()
}

#[test]
fn no_endpoint_disabled_sdk_or_no_exporter_turn_tracing_off() {
    assert!(config(&[]).unwrap().is_none());
    assert!(
        config(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "  ")])
            .unwrap()
            .is_none()
    );
    assert!(
        config(&[ENDPOINT, ("OTEL_SDK_DISABLED", "TRUE")])
            .unwrap()
            .is_none()
    );
    assert!(
        config(&[ENDPOINT, ("OTEL_SDK_DISABLED", "false")])
            .unwrap()
            .is_some()
    );
    assert!(
        config(&[ENDPOINT, ("OTEL_TRACES_EXPORTER", "none")])
            .unwrap()
            .is_none()
    );
    assert!(
        config(&[ENDPOINT, ("OTEL_TRACES_EXPORTER", "otlp")])
            .unwrap()
            .is_some()
    );
    assert!(error(&[("OTEL_TRACES_EXPORTER", "zipkin")]).starts_with("OTEL_TRACES_EXPORTER="));
    assert!(error(&[("OTEL_SDK_DISABLED", "yes")]).starts_with("OTEL_SDK_DISABLED="));
}

#[test]
fn defaults() {
    let c = enabled(&[]);
    assert_eq!(c.endpoint.to_string(), "http://collector:4318/v1/traces");
    assert_eq!(c.origin, "http://collector:4318");
    assert_eq!(c.protocol, Protocol::Protobuf);
    assert_eq!(c.timeout, Duration::from_secs(10));
    assert_eq!(c.sampler, Sampler::default());
    assert_eq!(c.max_queue, 2048);
    assert_eq!(c.max_batch, 512);
    assert_eq!(c.schedule_delay, Duration::from_secs(5));
    assert!(c.headers.is_empty());
}

#[test]
fn endpoints() {
    let c = enabled(&[(
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "https://otel.example.com/base/",
    )]);
    assert_eq!(
        c.endpoint.to_string(),
        "https://otel.example.com/base/v1/traces"
    );
    assert_eq!(c.origin, "https://otel.example.com:443");
    let c = enabled(&[(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "http://[::1]:9999/custom",
    )]);
    assert_eq!(c.endpoint.to_string(), "http://[::1]:9999/custom");
    assert_eq!(c.origin, "http://[::1]:9999");
    let c = config(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://10.0.0.5:4318")]);
    assert_eq!(
        c.unwrap().unwrap().endpoint.to_string(),
        "http://10.0.0.5:4318/"
    );

    let e = error(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "grpc://collector:4317")]);
    assert!(
        e.starts_with("OTEL_EXPORTER_OTLP_ENDPOINT=`grpc://collector:4317"),
        "{e}"
    );
    assert!(e.contains("use http or https"), "{e}");
    let e = error(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "collector:4318")]);
    assert!(
        e.starts_with("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=`collector:4318`"),
        "{e}"
    );
    let e = error(&[(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "http://user:pw@collector",
    )]);
    assert!(e.contains("userinfo"), "{e}");
}

#[test]
fn protocols() {
    assert_eq!(
        enabled(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")]).protocol,
        Protocol::Json
    );
    let c = enabled(&[
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
        ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"),
    ]);
    assert_eq!(c.protocol, Protocol::Protobuf);
    assert_eq!(
        error(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]),
        "OTEL_EXPORTER_OTLP_PROTOCOL=`grpc`: grpc is not supported; use http/protobuf or http/json"
    );
    let e = error(&[("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "thrift")]);
    assert!(
        e.starts_with("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=`thrift`"),
        "{e}"
    );
}

#[test]
fn headers_are_percent_decoded_and_the_traces_ones_win() {
    let c = enabled(&[
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            "Authorization=Bearer%20abc, x-team = core ,",
        ),
        ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-team=traces"),
    ]);
    let h: Vec<(String, String)> = c
        .headers
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_owned()))
        .collect();
    assert_eq!(
        h,
        [
            ("authorization".to_owned(), "Bearer abc".to_owned()),
            ("x-team".to_owned(), "traces".to_owned())
        ]
    );
    // A malformed header names the variable but never repeats the value (a secret).
    let e = error(&[("OTEL_EXPORTER_OTLP_HEADERS", "api-key")]);
    assert_eq!(e, "OTEL_EXPORTER_OTLP_HEADERS: entry 1 is not `key=value`");
    let e = error(&[("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "ok=1,bad key=s3cret")]);
    assert!(
        e.starts_with("OTEL_EXPORTER_OTLP_TRACES_HEADERS: header `bad key`"),
        "{e}"
    );
    assert!(!e.contains("s3cret"), "{e}");
    let e = error(&[("OTEL_EXPORTER_OTLP_HEADERS", "k=%zz")]);
    assert!(e.starts_with("OTEL_EXPORTER_OTLP_HEADERS: entry 1"), "{e}");
}

#[test]
fn key_value_lists() {
    assert_eq!(
        key_values("a=1, b = x%2Cy ,,c=").unwrap(),
        [
            ("a".to_owned(), "1".to_owned()),
            ("b".to_owned(), "x,y".to_owned()),
            ("c".to_owned(), String::new())
        ]
    );
    assert!(key_values("=v").is_err());
    assert!(key_values("k=%e9").is_err(), "not UTF-8");
}

#[test]
fn timeouts_and_batch_settings() {
    let c = enabled(&[
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
        ("OTEL_BSP_MAX_QUEUE_SIZE", "100"),
        ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1000"),
        ("OTEL_BSP_SCHEDULE_DELAY", "250"),
    ]);
    assert_eq!(c.timeout, Duration::from_millis(2500));
    assert_eq!(c.max_queue, 100);
    assert_eq!(c.max_batch, 100, "a batch is never larger than the queue");
    assert_eq!(c.schedule_delay, Duration::from_millis(250));
    let c = enabled(&[
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
        ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "700"),
    ]);
    assert_eq!(c.timeout, Duration::from_millis(700));
    for var in [
        "OTEL_EXPORTER_OTLP_TIMEOUT",
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
        "OTEL_BSP_MAX_QUEUE_SIZE",
        "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
        "OTEL_BSP_SCHEDULE_DELAY",
    ] {
        for bad in ["0", "-1", "5s"] {
            let e = error(&[(var, bad)]);
            assert_eq!(e, format!("{var}=`{bad}`: expected a positive integer"));
        }
    }
}

#[test]
fn samplers() {
    let s = |name: &str, arg: Option<&str>| {
        let mut pairs = vec![("OTEL_TRACES_SAMPLER", name)];
        if let Some(arg) = arg {
            pairs.push(("OTEL_TRACES_SAMPLER_ARG", arg));
        }
        enabled(&pairs).sampler
    };
    let plain = |root| Sampler {
        root,
        parent_based: false,
    };
    let parent = |root| Sampler {
        root,
        parent_based: true,
    };
    assert_eq!(s("always_on", None), plain(RootSampler::AlwaysOn));
    assert_eq!(s("always_off", None), plain(RootSampler::AlwaysOff));
    assert_eq!(s("traceidratio", None), plain(RootSampler::Ratio(1.0)));
    assert_eq!(
        s("traceidratio", Some("0.1")),
        plain(RootSampler::Ratio(0.1))
    );
    assert_eq!(
        s("parentbased_always_on", None),
        parent(RootSampler::AlwaysOn)
    );
    assert_eq!(
        s("parentbased_always_off", None),
        parent(RootSampler::AlwaysOff)
    );
    assert_eq!(
        s("parentbased_traceidratio", Some("0.25")),
        parent(RootSampler::Ratio(0.25))
    );
    // The argument only matters to the ratio samplers.
    assert_eq!(s("always_on", Some("junk")), plain(RootSampler::AlwaysOn));

    let e = error(&[("OTEL_TRACES_SAMPLER", "jaeger_remote")]);
    assert!(
        e.starts_with("OTEL_TRACES_SAMPLER=`jaeger_remote`: expected"),
        "{e}"
    );
    for bad in ["1.5", "-0.1", "half", "NaN"] {
        let e = error(&[
            ("OTEL_TRACES_SAMPLER", "traceidratio"),
            ("OTEL_TRACES_SAMPLER_ARG", bad),
        ]);
        assert_eq!(
            e,
            format!("OTEL_TRACES_SAMPLER_ARG=`{bad}`: expected a ratio from 0 to 1")
        );
    }
}

#[test]
fn the_resource() {
    let get = |c: &Config, k: &str| {
        c.resource
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    let c = enabled(&[]);
    assert_eq!(c.resource[0], ("service.name".into(), "sluice-test".into()));
    assert_eq!(get(&c, "telemetry.sdk.name").as_deref(), Some("sluice"));
    assert_eq!(get(&c, "telemetry.sdk.language").as_deref(), Some("rust"));
    assert_eq!(
        get(&c, "service.version").as_deref(),
        Some(env!("CARGO_PKG_VERSION"))
    );

    let c = enabled(&[(
        "OTEL_RESOURCE_ATTRIBUTES",
        "service.name=from-attrs,deployment.environment=prod%20eu,telemetry.sdk.name=nope",
    )]);
    assert_eq!(get(&c, "service.name").as_deref(), Some("from-attrs"));
    assert_eq!(
        get(&c, "deployment.environment").as_deref(),
        Some("prod eu")
    );
    assert_eq!(get(&c, "telemetry.sdk.name").as_deref(), Some("sluice"));
    let keys: Vec<&str> = c.resource.iter().map(|(k, _)| k.as_str()).collect();
    let mut unique = keys.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), keys.len(), "{keys:?}");

    let c = enabled(&[
        ("OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attrs"),
        ("OTEL_SERVICE_NAME", "from-name"),
    ]);
    assert_eq!(get(&c, "service.name").as_deref(), Some("from-name"));

    let e = error(&[("OTEL_RESOURCE_ATTRIBUTES", "a=1,broken")]);
    assert_eq!(
        e,
        "OTEL_RESOURCE_ATTRIBUTES=`a=1,broken`: entry 2 is not `key=value`"
    );
}

#[test]
fn an_unreadable_certificate_names_its_variable() {
    let e = error(&[("OTEL_EXPORTER_OTLP_CERTIFICATE", "/nonexistent/ca.pem")]);
    assert!(
        e.starts_with("OTEL_EXPORTER_OTLP_CERTIFICATE: cannot read `/nonexistent/ca.pem`"),
        "{e}"
    );
}

#[tokio::test]
async fn an_unusable_certificate_names_its_variable() {
    let path = std::env::temp_dir().join(format!("sluice-trace-bad-ca-{}.pem", std::process::id()));
    std::fs::write(
        &path,
        "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let path_str = path.to_str().unwrap().to_owned();
    let e = crate::Tracer::from_vars(
        "x",
        vars(&[
            ENDPOINT,
            ("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", &path_str),
        ]),
    )
    .unwrap_err()
    .to_string();
    std::fs::remove_file(&path).unwrap();
    assert!(
        e.starts_with("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE: "),
        "{e}"
    );
}
