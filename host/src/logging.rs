//! The process's tracing subscriber: `SLUICE_LOG` (an `EnvFilter` directive, default
//! `warn,sluice=info`) to stderr, as text or JSON, behind one fixed filter, [`shows`],
//! that keeps guest data out of the log whatever the directive says.
//!
//! wasmtime's `bindgen!` with tracing turned on (the WASI crates build their host bindings
//! that way) emits, for every call a guest makes, a `wit-bindgen import` span and TRACE
//! events carrying the call's arguments and result: a request's path and query, a
//! header name, an error's text — guest data, which may hold a secret the task read.
//! Those crates' own DEBUG lines can carry guest bytes too. This module must not let any
//! of it reach an output; it decides nothing else about what is logged.

use tracing::{Level, Metadata};
use tracing_subscriber::filter::{EnvFilter, filter_fn};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The directive used when `SLUICE_LOG` is unset or invalid.
pub const DEFAULT_DIRECTIVE: &str = "warn,sluice=info";

/// Targets (crates, or a module and what it contains) whose events below INFO can carry
/// what a guest passed to or got from a host call: wasmtime's WASI crates (generated
/// bindings with tracing on; stream workers that log the bytes written) and the sandbox's
/// own generated bindings (`host_imports`), should they ever turn tracing on.
const GUEST_CALL_TARGETS: &[&str] = &[
    "wasmtime_wasi",
    "wasmtime_wasi_io",
    "wasmtime_wasi_http",
    "wasmtime_wasi_config",
    "wasmtime_wasi_keyvalue",
    "wasmtime_wasi_nn",
    "wasmtime_wasi_threads",
    "wasmtime_wasi_tls",
    "wiggle",
    "sluice_sandbox::host_imports",
];

/// The spans `bindgen!` opens around each guest call (import) and host call (export):
/// their fields name the function only, but every event inside them is the call's.
const BINDING_SPANS: &[&str] = &["wit-bindgen import", "wit-bindgen export"];

/// Whether a span or event may be recorded at all, whatever `SLUICE_LOG` enables: never a
/// binding span, and nothing below INFO from [`GUEST_CALL_TARGETS`].
pub fn shows(meta: &Metadata<'_>) -> bool {
    if meta.is_span() && BINDING_SPANS.contains(&meta.name()) {
        return false;
    }
    let guest_call = GUEST_CALL_TARGETS.iter().any(|t| within(meta.target(), t));
    // `Level` orders by verbosity: TRACE and DEBUG are greater than INFO.
    !(guest_call && *meta.level() > Level::INFO)
}

/// `target` is `module` or inside it (`a::b` is within `a`, `ab` is not).
fn within(target: &str, module: &str) -> bool {
    target
        .strip_prefix(module)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
}

/// How log lines are written: `--log-format pretty` (text) or `json`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum LogFormat {
    Pretty,
    Json,
}

/// Installs the global subscriber: `SLUICE_LOG` (else [`DEFAULT_DIRECTIVE`]), then
/// [`shows`], to stderr in `format`.
pub fn init(format: LogFormat) {
    let directive =
        EnvFilter::try_from_env("SLUICE_LOG").unwrap_or_else(|_| EnvFilter::new(DEFAULT_DIRECTIVE));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(directive)
        .with_writer(std::io::stderr);
    // A filter layer over the whole subscriber: what it refuses is never recorded, by any
    // layer, at any level the directive asks for.
    let guard = filter_fn(shows);
    match format {
        LogFormat::Pretty => builder.finish().with(guard).init(),
        LogFormat::Json => builder.json().finish().with(guard).init(),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::fmt::MakeWriter;

    use super::*;

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Captured {
        type Writer = Captured;
        fn make_writer(&'a self) -> Captured {
            self.clone()
        }
    }

    /// Everything written under `directive` (plus [`shows`]) while `emit` runs.
    fn logged(directive: &str, emit: impl FnOnce()) -> String {
        let out = Captured::default();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(EnvFilter::new(directive))
            .with_writer(out.clone())
            .with_ansi(false)
            .finish()
            .with(filter_fn(shows));
        tracing::subscriber::with_default(subscriber, emit);
        String::from_utf8(out.0.lock().unwrap().clone()).unwrap()
    }

    /// The shape `bindgen!` generates for a traced import, under its real target.
    fn generated_call() {
        let span = tracing::span!(
            target: "wasmtime_wasi_http::p2::bindings::generated::wasi::http::types",
            Level::TRACE,
            "wit-bindgen import",
            module = "types",
            function = "[method]outgoing-request.set-path-with-query",
        );
        let _enter = span.enter();
        tracing::event!(
            target: "wasmtime_wasi_http::p2::bindings::generated::wasi::http::types",
            Level::TRACE,
            path_with_query = ?Some("/x?api_key=sk_shh"),
            "call"
        );
        tracing::event!(
            target: "wasmtime_wasi::p2::write_stream",
            Level::DEBUG,
            "worker writing: b\"sk_shh\""
        );
        tracing::event!(target: "sluice_worker::producer", Level::TRACE, "a host line");
        tracing::event!(target: "wasmtime_wasi_http::p2::error", Level::WARN, "a warning");
    }

    #[test]
    fn guest_call_tracing_is_dropped_at_every_directive() {
        for directive in [
            "trace",
            "wasmtime_wasi_http=trace,wasmtime_wasi=trace",
            "warn,wasmtime_wasi_http::p2::bindings=trace",
            "[wit-bindgen import]=trace",
        ] {
            let out = logged(directive, generated_call);
            assert!(!out.contains("sk_shh"), "{directive}: {out}");
            assert!(!out.contains("wit-bindgen"), "{directive}: {out}");
        }
        // The filter only removes those: the host's lines and the crates' warnings stay.
        let out = logged("trace", generated_call);
        assert!(
            out.contains("a host line") && out.contains("a warning"),
            "{out}"
        );
    }

    #[test]
    fn targets_match_whole_path_segments() {
        assert!(within("wasmtime_wasi", "wasmtime_wasi"));
        assert!(within("wasmtime_wasi::p2::bindings", "wasmtime_wasi"));
        assert!(!within("wasmtime_wasi_http", "wasmtime_wasi"));
        assert!(within(
            "sluice_sandbox::host_imports::v0_2",
            "sluice_sandbox::host_imports"
        ));
        assert!(!within(
            "sluice_sandbox::host",
            "sluice_sandbox::host_imports"
        ));
        assert!(!within("wasmtime", "wasmtime_wasi"));
    }
}
