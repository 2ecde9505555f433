//! A durable job's outbound request (`docs/durable.md`): the hooks' `send_request` hands
//! it here once the grant allowed it. The call's seq is reserved when the guest calls
//! `handle` (so calls it makes meanwhile come after it); the request body is read whole,
//! to fingerprint the request (method, URL, body hash); then:
//! - replay: the recorded response (or error code) is the answer, nothing is sent;
//! - live: everything journaled before it is made durable, the request leaves with an
//!   `Idempotency-Key` (job id and seq: the same in every run; a key the guest set
//!   itself is kept), its response is read whole, recorded and made durable before the
//!   guest sees it.
//!
//! Must not open a connection (the connector does) or send a replayed request.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use sluice_egress::{Connector, RequestTimeouts};
use wasmtime_wasi_http::{Error, WasiBody};

use super::calls::{HttpGrant, IoFuture, SendFuture, Shared, record, to_wasi};
use super::trace;
use crate::attempt_trace::AttemptTrace;
use crate::journal::codec::{self, HttpResult};
use crate::journal::{Journal, Step};
use crate::log_buffer::LogBuffer;

/// The header every request of a durable job carries.
const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// What a journaled request needs from the hooks.
pub(super) struct Journaled {
    pub journal: Journal,
    pub connector: Connector,
    pub grant: Arc<HttpGrant>,
    pub deadline: tokio::time::Instant,
    pub timeouts: RequestTimeouts,
    pub shared: Arc<Shared>,
    pub logs: LogBuffer,
    pub trace: Option<AttemptTrace>,
}

/// Sends (or replays) `request` as call `seq` of the journal.
pub(super) fn send(j: Journaled, seq: u32, request: http::Request<WasiBody>) -> SendFuture {
    Box::new(async move {
        let (mut parts, body) = request.into_parts();
        let method = parts.method.as_str().to_owned();
        let (body, fingerprint) = match body.collect().await {
            Ok(collected) => {
                let body = collected.to_bytes();
                let fingerprint = codec::http_request(&method, &parts.uri, &body);
                (Ok(body), fingerprint)
            }
            Err(error) => {
                let fingerprint = codec::http_request(&method, &parts.uri, b"(unreadable)");
                (Err(error), fingerprint)
            }
        };
        let seq = match j.journal.resolve(seq, "http", &fingerprint) {
            Step::Replay(bytes) => {
                let Some(result) = HttpResult::decode(&bytes) else {
                    return Err(Error::InternalError(Some(format!(
                        "journal entry {seq} is not an HTTP result"
                    ))));
                };
                return answer(result);
            }
            Step::Diverged => {
                return Err(Error::InternalError(Some(
                    "the replay diverged from the journal".into(),
                )));
            }
            Step::Live(seq) => seq,
        };
        let result = match body {
            Err(error) => HttpResult::Error(error_name(&error)),
            Ok(body) => {
                if let Err(failure) = j.journal.flush(Some(seq)).await {
                    return Err(Error::InternalError(Some(failure.to_string())));
                }
                if !parts.headers.contains_key(IDEMPOTENCY_KEY) {
                    let key = j.journal.idempotency_key(seq);
                    if let Ok(value) = http::HeaderValue::from_str(&key) {
                        parts.headers.insert(IDEMPOTENCY_KEY, value);
                    }
                }
                j.shared
                    .bytes_out
                    .fetch_add(body.len() as u64, Ordering::Relaxed);
                // Only a request sent gets a span (a replayed one was traced when sent).
                let span = j
                    .trace
                    .as_ref()
                    .map(|t| trace::start(t, &parts.method, &parts.uri, &mut parts.headers));
                let request = http::Request::from_parts(parts, Full::new(body));
                let result = live(&j, request).await;
                if let Some(span) = span {
                    trace::end(
                        span,
                        match &result {
                            HttpResult::Response { status, .. } => Ok(*status),
                            HttpResult::Error(name) => Err(name.as_str()),
                        },
                    );
                }
                result
            }
        };
        j.journal
            .record(seq, "http", fingerprint, result.summary(), result.encode());
        if let Err(failure) = j.journal.flush(Some(seq + 1)).await {
            return Err(Error::InternalError(Some(failure.to_string())));
        }
        answer(result)
    })
}

/// Sends the request and reads its response whole.
async fn live(j: &Journaled, request: http::Request<Full<Bytes>>) -> HttpResult {
    let began = Instant::now();
    let sent = j
        .connector
        .send(request, &j.grant.grant, j.deadline, j.timeouts)
        .await;
    let (response, io) = match sent {
        Ok(sent) => sent,
        Err(error) => {
            record(&j.shared, error.outcome(), began.elapsed());
            j.logs.line("WARN", &error.to_string());
            return HttpResult::Error(error_name(&to_wasi(error)));
        }
    };
    // The connection is driven beside the body's reading; it ends with the body.
    tokio::spawn(async move {
        let _ = io.await;
    });
    let (head, body) = response.into_parts();
    match body.collect().await {
        Ok(collected) => {
            record(&j.shared, "ok", began.elapsed());
            let body = collected.to_bytes();
            j.shared
                .bytes_in
                .fetch_add(body.len() as u64, Ordering::Relaxed);
            HttpResult::Response {
                status: head.status.as_u16(),
                headers: head
                    .headers
                    .iter()
                    .map(|(name, value)| (name.as_str().to_owned(), value.as_bytes().to_vec()))
                    .collect(),
                body: body.to_vec(),
            }
        }
        Err(error) => {
            record(&j.shared, error.outcome(), began.elapsed());
            j.logs.line("WARN", &error.to_string());
            HttpResult::Error(error_name(&to_wasi(error)))
        }
    }
}

/// What the guest gets for a recorded (or just recorded) result (also a test's recorded
/// response, `recorded.rs`).
pub(super) fn answer(result: HttpResult) -> Result<(http::Response<WasiBody>, IoFuture), Error> {
    match result {
        HttpResult::Error(name) => Err(error_of(&name)),
        HttpResult::Response {
            status,
            headers,
            body,
        } => {
            let mut builder = http::Response::builder().status(status);
            for (name, value) in headers {
                builder = builder.header(name, value);
            }
            let body = Full::new(Bytes::from(body))
                .map_err(|never| match never {})
                .boxed_unsync();
            let response = builder
                .body(body)
                .map_err(|e| Error::InternalError(Some(format!("recorded response: {e}"))))?;
            let io: IoFuture = Box::new(async { Ok(()) });
            Ok((response, io))
        }
    }
}

/// The name an error code is recorded under.
fn error_name(error: &Error) -> String {
    format!("{error:?}")
}

/// The error code recorded as `name` (the ones the connector gives without a detail;
/// any other is replayed as an internal error naming it).
fn error_of(name: &str) -> Error {
    match name {
        "HttpRequestDenied" => Error::HttpRequestDenied,
        "DestinationIpProhibited" => Error::DestinationIpProhibited,
        "DestinationIpUnroutable" => Error::DestinationIpUnroutable,
        "DnsTimeout" => Error::DnsTimeout,
        "ConnectionRefused" => Error::ConnectionRefused,
        "ConnectionTimeout" => Error::ConnectionTimeout,
        "ConnectionReadTimeout" => Error::ConnectionReadTimeout,
        "ConnectionTerminated" => Error::ConnectionTerminated,
        "HttpRequestUriInvalid" => Error::HttpRequestUriInvalid,
        "TlsCertificateError" => Error::TlsCertificateError,
        "TlsProtocolError" => Error::TlsProtocolError,
        "HttpProtocolError" => Error::HttpProtocolError,
        other => Error::InternalError(Some(format!("recorded error: {other}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_error_codes_come_back_as_themselves() {
        for error in [Error::ConnectionRefused, Error::ConnectionReadTimeout] {
            let name = error_name(&error);
            assert_eq!(error_name(&error_of(&name)), name);
        }
        assert!(matches!(
            error_of("Something(1)"),
            Error::InternalError(Some(_))
        ));
    }
}
