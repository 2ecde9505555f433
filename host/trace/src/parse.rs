//! What one OpenTelemetry variable's value means: positive integers, the endpoint URL,
//! `key=value` lists (headers, resource attributes) with percent-decoding, the sampler
//! and its argument, the resource; and the error naming the variable that is wrong.
//!
//! Must not: look a variable up (the config module does), or print a header value in an
//! error (headers carry credentials).

use http::{HeaderName, HeaderValue, Uri};

use crate::sampler::{RootSampler, Sampler};

/// A configuration that cannot be used. Each message names the variable.
#[derive(thiserror::Error, Debug)]
#[non_exhaustive]
pub enum TraceConfigError {
    /// A variable's value is not one this exporter accepts.
    #[error("{var}=`{value}`: {problem}")]
    Invalid {
        /// The variable, e.g. `OTEL_EXPORTER_OTLP_ENDPOINT`.
        var: &'static str,
        /// Its value as given.
        value: String,
        /// What is wrong and what is accepted.
        problem: String,
    },
    /// A headers variable is malformed (its value is not repeated: it may hold secrets).
    #[error("{var}: {problem}")]
    InvalidHeaders {
        /// `OTEL_EXPORTER_OTLP_HEADERS` or `OTEL_EXPORTER_OTLP_TRACES_HEADERS`.
        var: &'static str,
        /// Which entry is wrong, by its key or position.
        problem: String,
    },
    /// The certificate file named by a variable cannot be read or used.
    #[error("{var}: {problem}")]
    Certificate {
        /// `OTEL_EXPORTER_OTLP_CERTIFICATE` or `OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE`.
        var: &'static str,
        /// Why.
        problem: String,
    },
    /// Tracing is configured but there is no tokio runtime to run the exporter on.
    #[error("OTEL_EXPORTER_OTLP_ENDPOINT is set but there is no tokio runtime to export on")]
    NoRuntime,
}

/// A positive integer, or `default` when unset.
pub(crate) fn positive(
    var: &'static str,
    value: Option<&str>,
    default: u64,
) -> Result<u64, TraceConfigError> {
    let Some(value) = value else {
        return Ok(default);
    };
    match value.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(TraceConfigError::Invalid {
            var,
            value: value.to_owned(),
            problem: "expected a positive integer".into(),
        }),
    }
}

/// The endpoint as a URI and its `scheme://host:port`; http and https only.
pub(crate) fn parse_endpoint(raw: &str) -> Result<(Uri, String), String> {
    let uri: Uri = raw.parse().map_err(|e| format!("not a URL: {e}"))?;
    let scheme = match uri.scheme_str().map(str::to_ascii_lowercase).as_deref() {
        Some("http") => "http",
        Some("https") => "https",
        Some(other) => {
            return Err(format!(
                "scheme `{other}` is not supported; use http or https"
            ));
        }
        None => return Err("no scheme; write http://host:port or https://host:port".into()),
    };
    let authority = uri.authority().ok_or("no host")?;
    if authority.as_str().contains('@') {
        return Err(
            "userinfo is not allowed; put credentials in OTEL_EXPORTER_OTLP_HEADERS".into(),
        );
    }
    if authority.host().is_empty() {
        return Err("no host".into());
    }
    let port = authority
        .port_u16()
        .unwrap_or(if scheme == "https" { 443 } else { 80 });
    Ok((
        uri.clone(),
        format!("{scheme}://{}:{port}", authority.host()),
    ))
}

/// `key=value,...` with percent-decoded values, as headers.
pub(crate) fn parse_headers(
    var: &'static str,
    raw: &str,
) -> Result<Vec<(HeaderName, HeaderValue)>, TraceConfigError> {
    let pairs =
        key_values(raw).map_err(|problem| TraceConfigError::InvalidHeaders { var, problem })?;
    pairs
        .into_iter()
        .map(|(k, v)| {
            let bad = |what: &str| TraceConfigError::InvalidHeaders {
                var,
                problem: format!("header `{k}`: {what}"),
            };
            let name = HeaderName::try_from(k.as_str()).map_err(|_| bad("not a header name"))?;
            let value = HeaderValue::try_from(v)
                .map_err(|_| bad("its value is not a valid header value"))?;
            Ok((name, value))
        })
        .collect()
}

/// The W3C-baggage-like lists of the OpenTelemetry variables: `k=v` separated by `,`,
/// whitespace trimmed, values percent-decoded. The error names the entry by position.
pub(crate) fn key_values(raw: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (i, entry) in raw.split(',').enumerate() {
        let entry = entry.trim();
        if entry.is_empty() {
            continue;
        }
        let Some((key, value)) = entry.split_once('=') else {
            return Err(format!("entry {} is not `key=value`", i + 1));
        };
        let key = key.trim();
        if key.is_empty() {
            return Err(format!("entry {} has an empty key", i + 1));
        }
        let value = percent_decode(value.trim()).ok_or_else(|| {
            format!(
                "entry {} (`{key}`) has a bad percent escape or is not UTF-8",
                i + 1
            )
        })?;
        out.push((key.to_owned(), value));
    }
    Ok(out)
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

pub(crate) fn sampler(
    name: Option<String>,
    arg: Option<String>,
) -> Result<Sampler, TraceConfigError> {
    let ratio = || -> Result<f64, TraceConfigError> {
        let Some(arg) = &arg else {
            return Ok(1.0);
        };
        match arg.parse::<f64>() {
            Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
            _ => Err(TraceConfigError::Invalid {
                var: "OTEL_TRACES_SAMPLER_ARG",
                value: arg.clone(),
                problem: "expected a ratio from 0 to 1".into(),
            }),
        }
    };
    let Some(name) = name else {
        return Ok(Sampler::default());
    };
    let (root, parent_based) = match name.as_str() {
        "always_on" => (RootSampler::AlwaysOn, false),
        "always_off" => (RootSampler::AlwaysOff, false),
        "traceidratio" => (RootSampler::Ratio(ratio()?), false),
        "parentbased_always_on" => (RootSampler::AlwaysOn, true),
        "parentbased_always_off" => (RootSampler::AlwaysOff, true),
        "parentbased_traceidratio" => (RootSampler::Ratio(ratio()?), true),
        _ => {
            return Err(TraceConfigError::Invalid {
                var: "OTEL_TRACES_SAMPLER",
                value: name,
                problem: "expected always_on, always_off, traceidratio, parentbased_always_on, \
                          parentbased_always_off or parentbased_traceidratio"
                    .into(),
            });
        }
    };
    Ok(Sampler { root, parent_based })
}

/// `service.name` first, then the operator's attributes, then the SDK's own.
pub(crate) fn resource(
    default_service: &str,
    service_name: Option<String>,
    attributes: Option<String>,
) -> Result<Vec<(String, String)>, TraceConfigError> {
    let given = match &attributes {
        Some(raw) => key_values(raw).map_err(|problem| TraceConfigError::Invalid {
            var: "OTEL_RESOURCE_ATTRIBUTES",
            value: raw.clone(),
            problem,
        })?,
        None => Vec::new(),
    };
    let from_attributes = given
        .iter()
        .rev()
        .find(|(k, _)| k == "service.name")
        .map(|(_, v)| v.clone());
    let service = service_name
        .or(from_attributes)
        .unwrap_or_else(|| default_service.to_owned());
    let mut out = vec![("service.name".to_owned(), service)];
    let mut put = |k: &str, v: String| match out.iter_mut().find(|(key, _)| key == k) {
        Some(slot) => slot.1 = v,
        None => out.push((k.to_owned(), v)),
    };
    put("service.version", env!("CARGO_PKG_VERSION").to_owned());
    for (k, v) in given.into_iter().filter(|(k, _)| k != "service.name") {
        put(&k, v);
    }
    put("telemetry.sdk.name", "sluice".to_owned());
    put("telemetry.sdk.language", "rust".to_owned());
    put(
        "telemetry.sdk.version",
        env!("CARGO_PKG_VERSION").to_owned(),
    );
    Ok(out)
}
