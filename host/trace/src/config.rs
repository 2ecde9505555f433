//! The exporter's configuration from the standard OpenTelemetry variables
//! (`OTEL_EXPORTER_OTLP_*`, `OTEL_TRACES_SAMPLER*`, `OTEL_BSP_*`, `OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_SDK_DISABLED`, `OTEL_TRACES_EXPORTER`).
//!
//! Must not: read the process environment itself (a lookup function is handed in), open
//! a connection, or print a header value in an error (headers carry credentials). What
//! each value means is the `parse` module's.

use std::time::Duration;

use http::{HeaderName, HeaderValue, Uri};

pub(crate) use crate::parse::TraceConfigError;
use crate::parse::{parse_endpoint, parse_headers, positive, resource, sampler};
use crate::sampler::Sampler;

/// How spans are encoded on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// `http/protobuf`: `application/x-protobuf`.
    Protobuf,
    /// `http/json`: `application/json`.
    Json,
}

impl Protocol {
    pub fn content_type(self) -> &'static str {
        match self {
            Protocol::Protobuf => "application/x-protobuf",
            Protocol::Json => "application/json",
        }
    }
}

/// Everything the tracer and its exporter need.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    /// The full URL spans are POSTed to.
    pub endpoint: Uri,
    /// `scheme://host:port` of the endpoint: the one destination the exporter's grant allows.
    pub origin: String,
    /// Which variable named the endpoint (for errors found later).
    pub endpoint_var: &'static str,
    pub protocol: Protocol,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub timeout: Duration,
    /// PEM of extra root CAs (`OTEL_EXPORTER_OTLP_CERTIFICATE`), empty = none.
    pub root_certs_pem: Vec<u8>,
    /// Which variable named the certificate file (for errors found later).
    pub certificate_var: &'static str,
    pub sampler: Sampler,
    /// Resource attributes, keys unique, `service.name` first.
    pub resource: Vec<(String, String)>,
    pub max_queue: usize,
    pub max_batch: usize,
    pub schedule_delay: Duration,
}

impl Config {
    /// The configuration `var` describes; `Ok(None)` when tracing is off (no endpoint,
    /// `OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none`).
    pub fn from_vars(
        default_service: &str,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, TraceConfigError> {
        // An empty variable counts as unset (the OpenTelemetry rule).
        let get = |name: &str| {
            var(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let invalid = |var: &'static str, value: &str, problem: &str| TraceConfigError::Invalid {
            var,
            value: value.to_owned(),
            problem: problem.to_owned(),
        };
        if let Some(v) = get("OTEL_SDK_DISABLED") {
            match v.to_ascii_lowercase().as_str() {
                "true" => return Ok(None),
                "false" => {}
                _ => return Err(invalid("OTEL_SDK_DISABLED", &v, "expected true or false")),
            }
        }
        if let Some(v) = get("OTEL_TRACES_EXPORTER") {
            let names: Vec<String> = v
                .split(',')
                .map(|n| n.trim().to_ascii_lowercase())
                .collect();
            if let Some(other) = names
                .iter()
                .find(|n| !matches!(n.as_str(), "otlp" | "none"))
            {
                let problem = format!("exporter `{other}` is not supported; use otlp or none");
                return Err(invalid("OTEL_TRACES_EXPORTER", &v, &problem));
            }
            if names.iter().all(|n| n == "none") {
                return Ok(None);
            }
        }
        let (endpoint_var, raw) = match get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            Some(url) => ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", url),
            None => match get("OTEL_EXPORTER_OTLP_ENDPOINT") {
                Some(base) => (
                    "OTEL_EXPORTER_OTLP_ENDPOINT",
                    format!("{}/v1/traces", base.trim_end_matches('/')),
                ),
                None => return Ok(None),
            },
        };
        let (endpoint, origin) =
            parse_endpoint(&raw).map_err(|p| invalid(endpoint_var, &raw, &p))?;

        let (protocol_var, protocol) = first(
            &get,
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        );
        let protocol = match protocol.as_deref() {
            None | Some("http/protobuf") => Protocol::Protobuf,
            Some("http/json") => Protocol::Json,
            Some(p) if p.starts_with("grpc") => {
                return Err(invalid(
                    protocol_var,
                    p,
                    "grpc is not supported; use http/protobuf or http/json",
                ));
            }
            Some(p) => {
                return Err(invalid(
                    protocol_var,
                    p,
                    "expected http/protobuf or http/json",
                ));
            }
        };

        let mut headers = Vec::new();
        for name in [
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        ] {
            if let Some(v) = get(name) {
                for (key, value) in parse_headers(name, &v)? {
                    // The traces-specific variable wins over the general one, key by key.
                    headers.retain(|(k, _): &(HeaderName, HeaderValue)| *k != key);
                    headers.push((key, value));
                }
            }
        }

        let (timeout_var, timeout) = first(
            &get,
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
            "OTEL_EXPORTER_OTLP_TIMEOUT",
        );
        let timeout = Duration::from_millis(positive(timeout_var, timeout.as_deref(), 10_000)?);

        let (certificate_var, certificate) = first(
            &get,
            "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
            "OTEL_EXPORTER_OTLP_CERTIFICATE",
        );
        let root_certs_pem = match certificate {
            None => Vec::new(),
            Some(path) => std::fs::read(&path).map_err(|e| TraceConfigError::Certificate {
                var: certificate_var,
                problem: format!("cannot read `{path}`: {e}"),
            })?,
        };

        let sampler = sampler(get("OTEL_TRACES_SAMPLER"), get("OTEL_TRACES_SAMPLER_ARG"))?;

        let max_queue = positive(
            "OTEL_BSP_MAX_QUEUE_SIZE",
            get("OTEL_BSP_MAX_QUEUE_SIZE").as_deref(),
            2048,
        )?;
        let max_batch = positive(
            "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
            get("OTEL_BSP_MAX_EXPORT_BATCH_SIZE").as_deref(),
            512,
        )?;
        let delay = positive(
            "OTEL_BSP_SCHEDULE_DELAY",
            get("OTEL_BSP_SCHEDULE_DELAY").as_deref(),
            5000,
        )?;
        let clamp = |n: u64| usize::try_from(n).unwrap_or(usize::MAX).min(1 << 20);
        let max_queue = clamp(max_queue);

        let resource = resource(
            default_service,
            get("OTEL_SERVICE_NAME"),
            get("OTEL_RESOURCE_ATTRIBUTES"),
        )?;
        Ok(Some(Config {
            endpoint,
            origin,
            endpoint_var,
            protocol,
            headers,
            timeout,
            root_certs_pem,
            certificate_var,
            sampler,
            resource,
            max_queue,
            // The spec: a batch is never larger than the queue.
            max_batch: clamp(max_batch).min(max_queue),
            schedule_delay: Duration::from_millis(delay),
        }))
    }
}

/// The traces-specific variable if set, else the general one; with the name of the one used.
fn first(
    get: &impl Fn(&str) -> Option<String>,
    specific: &'static str,
    general: &'static str,
) -> (&'static str, Option<String>) {
    match get(specific) {
        Some(v) => (specific, Some(v)),
        None => (general, get(general)),
    }
}
